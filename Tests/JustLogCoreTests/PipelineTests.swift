import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

@Suite struct PipelineTests {
    func logger(
        _ routes: [LogPipeline.Route],
        pipeline: LogPipeline.Configuration = .init(),
        sanitizer: Sanitizer? = nil,
        diagnostics: DiagnosticSink = .standardError
    ) -> StructuredLogger {
        StructuredLogger(
            configuration: .init(
                destinations: routes,
                runtime: Fixtures.runtime,
                sanitizer: sanitizer,
                pipeline: pipeline,
                diagnostics: diagnostics
            )
        )
    }

    /// Review (helper-39): a shutdown that gave up on a stalled destination took the pipeline out of the exit
    /// handler while its worker still had events to write: at exit they were neither waited for nor said lost.
    @Test func aShutdownThatGivesUpLeavesThePipelineToTheExitHandlerUntilItsWorkerFinishes() async throws {
        let blocking = BlockingDestination()
        defer { blocking.release() }
        let pipeline = LogPipeline(setup: .init(routes: [.init(blocking)]), diagnostics: DiagnosticSink { _ in })
        pipeline.submit(Fixtures.event(.info, "stalled"))
        let error = await offThePool { pipeline.shutdown(timeout: 0.3) as? JustLogError }
        #expect(error?.code == .timeout, "\(String(describing: error))")
        #expect(pipeline.isWaitedForAtExit, "its worker still has the event to write")
        blocking.release()
        #expect(await eventually(timeout: .seconds(60)) { !pipeline.isWaitedForAtExit }, "it leaves once finished")
        #expect(blocking.written == 1)
    }

    /// Review (helper-39): a second shutdown, waiting for the worker to finish, was counted in `callersWaiting` —
    /// as a log call waiting for room.
    @Test func aShutdownWaitingForTheWorkerIsNotALogCallWaiting() async throws {
        let blocking = BlockingDestination()
        defer { blocking.release() }
        let pipeline = LogPipeline(setup: .init(routes: [.init(blocking)]), diagnostics: DiagnosticSink { _ in })
        pipeline.submit(Fixtures.event(.info, "stalled"))
        let finished = LockedValue(0)
        for _ in 0..<2 {
            Thread.detachNewThread {
                _ = pipeline.shutdown(timeout: 60)
                finished.withLock { $0 += 1 }
            }
        }
        let counted = await eventually(timeout: .seconds(3)) { pipeline.currentStatistics.callersWaiting > 0 }
        #expect(!counted, "no log call waits")
        blocking.release()
        #expect(await eventually(timeout: .seconds(60)) { finished.current == 2 })
    }

    @Test func sixteenConcurrentTasksEachLandExactlyOnceAndInOrder() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("concurrent.log")
        let file = try FileDestination(configuration: .init(url: url, maximumFileSize: 1 << 30))
        // Patience well past a stall of the whole process (ThreadSanitizer on a loaded machine stalled the pipeline's
        // thread for over the default 1 s, and 2 events were dropped as `fullQueueWait` allows): what is tested here
        // is order and exactly-once, not that drop (see `fullQueueWaitsThenDropsCountsAndReports`).
        let logger = logger([.init(file)], pipeline: .init(fullQueueWait: 30))
        let tasks = 16
        // Under ThreadSanitizer, 160,000 calls took ~125 s of CPU alone, a third of CI's sanitized run: 32,000 still
        // interleave sixteen tasks on two threads throughout.
        let perTask = underThreadSanitizer ? 2_000 : 10_000
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for index in 0..<perTask {
                        logger.info("task-\(task)-\(index)", userInfo: ["task": task])
                        // Sixteen CPU-bound tasks on a two-thread pool: let other tests' tasks run too.
                        if index % 500 == 0 { await Task.yield() }
                    }
                }
            }
        }
        try await logger.flush()

        var nextIndex = [Int](repeating: 0, count: tasks)
        var ids = Set<String>()
        let text = try String(contentsOf: url, encoding: .utf8)
        // Read with Foundation's parser, built optimized: JustLog's own reader, built for debugging as this suite is,
        // took ~40 % of the test's CPU for its 160,000 lines (a minute of CPU that starved the other tests early in
        // CI's runs). Each line must still be a whole JSON object; the line format is the golden tests' subject.
        for line in text.components(separatedBy: "\n") where !line.isEmpty {
            guard let start = line.firstIndex(of: "{"),
                let object = try? JSONSerialization.jsonObject(with: Data(line[start...].utf8)) as? [String: Any],
                let message = object["message"] as? String,
                let eventID = (object["metadata"] as? [String: Any])?["event_id"] as? String
            else {
                Issue.record("unreadable line: \(line.prefix(300))")
                continue
            }
            let parts = message.split(separator: "-")
            guard parts.count == 3, let task = Int(parts[1]), let index = Int(parts[2]), (0..<tasks).contains(task)
            else {
                Issue.record("unexpected line: \(line.prefix(300))")
                continue
            }
            #expect(index == nextIndex[task], "task \(task): expected \(nextIndex[task]), found \(index)")
            nextIndex[task] = index + 1
            ids.insert(eventID)
        }
        #expect(nextIndex == [Int](repeating: perTask, count: tasks))
        #expect(ids.count == tasks * perTask, "event_id must be unique per event")
        #expect(logger.pipeline.currentStatistics.dropped == 0)
    }

    @Test func flushCompletesAfterEverythingSubmittedBeforeIt() async throws {
        let capture = CapturingDestination()
        let logger = logger([.init(capture)])
        for index in 0..<1000 { logger.debug("event \(index)") }
        try await logger.flush()
        #expect(capture.records.count == 1000)
        #expect(capture.records.map(\.message) == (0..<1000).map { "event \($0)" })
        #expect(capture.flushCount == 1)
    }

    /// Bursts with pauses long enough for the pipeline's thread to linger out and sleep: a burst's first event
    /// wakes the thread and the events after it in the burst do not (the first caller did); a flush wakes it
    /// whatever the callers did. Every other burst is waited for without a flush: a wake-up lost by the events
    /// leaves those to wait, one lost by a flush leaves the flush to time out.
    @Test(.timeLimit(.minutes(2))) func burstsAfterSleepsWakeTheWorkerAndEveryFlushCompletes() async throws {
        let capture = CapturingDestination()
        let logger = logger([.init(capture)])
        let rounds = 300
        let failures = LockedValue<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                var logged = 0
                for round in 0..<rounds {
                    for index in 0..<(1 + round % 7) { logger.info("round \(round) event \(index)") }
                    logged += 1 + round % 7
                    if round % 2 == 0 {
                        if logger.pipeline.flush(timeout: 10) != nil {
                            failures.withLock { $0.append("flush \(round)") }
                        }
                    } else {
                        let deadline = Date().addingTimeInterval(10)
                        while capture.records.count < logged, Date() < deadline { usleep(200) }
                        if capture.records.count < logged { failures.withLock { $0.append("events \(round)") } }
                    }
                    if !failures.current.isEmpty { break }
                    usleep(useconds_t(1_500 + (round % 3) * 1_000))  // past the 1 ms linger: the thread sleeps
                }
                done.resume()
            }.start()
        }
        try #require(failures.current == [])
        let expected = (0..<rounds).reduce(0) { $0 + 1 + $1 % 7 }
        #expect(capture.records.count == expected)
    }

    /// A shutdown waits while the destinations make progress: its timeout is how long they may go without any, not
    /// how long they may take (a slow machine, a journal's recovery under ThreadSanitizer). Events that take longer
    /// than the timeout in all, but keep moving, all arrive.
    @Test func shutdownWaitsWhileTheDestinationsMakeProgress() async throws {
        // Each write takes 0.2 s, whatever its size: progress shows once per write, so a loaded machine delays it
        // by one wake-up, not one per event. The first write waits until the shutdown has begun, so that the other
        // 1,535 events go out in exit-sized writes of 64: 24 writes, 4.8 s in all, more than the 3 s timeout.
        // (The timeout leaves room for the whole process to stall: under ThreadSanitizer on a loaded machine it
        // made no progress for 1 s at times.)
        //
        // A shutdown that failed while the machine held the destination's threads back for longer than the
        // patience's margin (2.4 s: 3 s less a write and room for late wakes), as they measured, says nothing of the
        // waiting: the scenario runs
        // again, at most three times (under ThreadSanitizer in CI, once 3 s went by without progress). A fixed 3 s
        // bound fails every time, with the writes on time.
        for attempt in 1...3 {
            let slow = SlowDestination(secondsPerWrite: 0.2)
            let logger = logger([.init(slow)])
            for index in 0..<1536 { logger.info("event \(index)") }
            // The shutdown on a thread of its own (it takes small batches from its first instruction), and the first
            // write released 0.3 s after it begins, on a thread too: the test pool's two threads may be busy for
            // seconds, and a shutdown that began after the release would meet writes of 256, 1.2 s in all (the test
            // passed without its case).
            let shutdownBegan = LockedValue<ContinuousClock.Instant?>(nil)
            let outcome = LockedValue<String??>(nil)
            Thread.detachNewThread {
                let giveUp = Date().addingTimeInterval(120)
                while shutdownBegan.current == nil, Date() < giveUp { usleep(1_000) }
                Thread.sleep(forTimeInterval: 0.3)
                slow.open()
            }
            Thread.detachNewThread {
                shutdownBegan.withLock { $0 = .now }
                let failure = logger.pipeline.shutdown(timeout: 3)
                outcome.withLock { $0 = .some(failure.map { "\($0)" }) }
            }
            #expect(await eventually(timeout: .seconds(120)) { outcome.current != nil })
            let failure = outcome.current ?? nil
            // The writes go on after a shutdown that gave up; the last one ends the measure.
            if failure != nil { _ = await eventually(timeout: .seconds(60)) { slow.count == 1536 } }
            let heldBack = shutdownBegan.current.map { slow.longestHoldBack(since: $0, release: 0.3) } ?? 0
            if failure != nil, heldBack > 2.4, attempt < 3 {
                print("the machine held the destination's threads back \(heldBack) s: again")
                continue
            }
            #expect(failure == nil, "\(failure ?? ""); the destination was held back \(heldBack) s at most")
            #expect(slow.count == 1536)
            // The first write (at most 256, built before it blocked), then writes of 64: 21 to 25 in all (exit-sized
            // batches went out as 63 and 1: 48 writes), at least 4.2 s of writing, more than the patience (the case
            // this test is about).
            #expect(slow.writes <= 25 && slow.writes >= 21, "\(slow.writes) writes")
            break
        }
    }

    /// A shutdown (the exit handler waits the same way) that begins while a write is under way sees progress when
    /// that write ends, and a write is at most `writeLimit` (256) records: through a destination that needs 4 ms a
    /// record, ~1 s, within a 3 s patience. (A whole batch of 1,024 went out in one write, here 4 s: the wait
    /// gave up, as the exit flush of `ChildProcessTests` did on a loaded machine with a smaller one.) The patience
    /// leaves 2 s for the machine to stall between two writes: with 2 ms a record and 1.5 s, CI's ThreadSanitizer
    /// run twice met a stall of over 1 s — the 4× between a bounded write and a whole batch is
    /// kept, so `largestWrite` and the patience still catch the old behaviour.
    @Test func aShutdownThatBeginsDuringAWriteSeesProgressWithinItsPatience() async throws {
        // On a thread of its own: the shutdown must begin during the second write, not whenever the shared pool,
        // which other tests' blocking waits hold, gets back to this task (once 58 s later, under ThreadSanitizer in
        // CI: every write was long done, and the shutdown then met a stalled machine instead).
        await withTaskExecutorPreference(OwnThreadExecutor.shared) {
            // A shutdown that failed while the machine held the pipeline's thread alone back for longer than the
            // patience's margin (2 s less the longest write), as the destination measured — in a sleep, or between
            // two writes (once under ThreadSanitizer beside the other suites: no progress for 3 s, no sleep 1.9 s
            // late) — says nothing of the writes: the scenario runs again, at most three times. (Time the whole
            // program did not run, the shutdown does not count: see `Patience`.) A whole batch in one write fails
            // every time.
            for attempt in 1...3 {
                let slow = PerRecordSlowDestination(secondsPerRecord: 0.004)
                let logger = logger([.init(slow)])
                let count = 1_400
                for index in 0..<count { logger.info("event \(index)") }
                // Once the second write is under way: the worker took and built its second batch before the
                // shutdown.
                #expect(await eventually(timeout: .seconds(60)) { slow.writesStarted >= 2 })
                let failure = await logger.pipeline.shutdown(timeout: 3)
                #expect(slow.largestWrite <= 256)
                // The write the stall fell in, or the one after it, measures it: the writes go on after a shutdown
                // that gave up.
                if failure != nil { _ = await eventually(timeout: .seconds(60)) { slow.count == count && slow.isIdle } }
                if failure != nil, slow.longestHoldBack > 1.9, attempt < 3 {
                    print("the machine held the pipeline's thread back \(slow.longestHoldBack) s: again")
                    continue
                }
                #expect(
                    failure == nil,
                    "\(String(describing: failure)); the pipeline's thread held back at most \(slow.longestHoldBack) s"
                )
                #expect(slow.count == count)
                break
            }
        }
    }

    /// `flush(timeout:) async` and `shutdown(timeout:) async` wait on threads of their own. (They waited on
    /// Dispatch's shared threads, one per core on Linux: a few flushes of a stalled destination held them all, and
    /// work queued there, the program's or a destination's own timer, waited until the flushes timed out.)
    @Test func awaitedFlushesLeaveDispatchsSharedThreadsFree() async throws {
        // The test's tasks run on a thread of their own: their timing must not depend on other tests' load.
        await withTaskExecutorPreference(OwnThreadExecutor.shared) {
            let held = FlushHoldingDestination()
            let logger = logger([.init(held)])
            // Dispatch adds a thread about once a second while its threads are blocked: 32 waits held them for
            // longer than the flushes' 10 s.
            let waiters = 32
            async let failures = withTaskGroup(of: (any Error)?.self) { group in
                for _ in 0..<waiters { group.addTask { await logger.pipeline.flush(timeout: 10) } }
                return await group.reduce(into: [String]()) { failures, error in
                    if let error { failures.append("\(error)") }
                }
            }
            #expect(await eventually(timeout: .seconds(60)) { held.heldCount == waiters })
            // The destination finishes its flushes on Dispatch, as Logstash's flush timer does.
            DispatchQueue.global().async { held.release() }
            #expect(await failures == [])
            await logger.pipeline.shutdown()
        }
    }

    @Test func eachDestinationReceivesOnlyItsMinimumLevelAndAbove() async throws {
        let console = CapturingDestination()
        let file = CapturingDestination()
        let remote = CapturingDestination()
        let logger = logger([
            .init(console, minimumLevel: .warning), .init(file, minimumLevel: .debug),
            .init(remote, minimumLevel: .info),
        ])
        for level in LogLevel.allCases { logger.log(level, "\(level)") }
        try await logger.flush()
        #expect(console.records.map(\.level) == [.warning, .error])
        #expect(file.records.map(\.level) == [.debug, .info, .warning, .error])
        #expect(remote.records.map(\.level) == [.info, .warning, .error])
    }

    @Test func messageBelowEveryMinimumLevelIsNeverEvaluated() async throws {
        let capture = CapturingDestination()
        let logger = logger([.init(capture, minimumLevel: .info)])
        let evaluated = LockedValue(false)
        func expensive() -> String {
            evaluated.withLock { $0 = true }
            return "expensive"
        }
        logger.debug(expensive())
        try await logger.flush()
        #expect(!evaluated.current)
        #expect(capture.records.isEmpty)
    }

    /// Issue #8: a filtered-out call still built its `userInfo` dictionary (and evaluated its error).
    @Test func userInfoAndErrorBelowEveryMinimumLevelAreNeverEvaluated() async throws {
        let capture = CapturingDestination()
        let logger = logger([.init(capture, minimumLevel: .info)])
        let evaluations = LockedValue(0)
        func fields() -> [String: Any] {
            evaluations.withLock { $0 += 1 }
            return ["userID": 42]
        }
        func failure() -> any Error {
            evaluations.withLock { $0 += 1 }
            return CocoaError(.fileNoSuchFile)
        }
        logger.debug("filtered", error: failure(), userInfo: fields())
        #expect(evaluations.current == 0)
        logger.info("kept", error: failure(), userInfo: fields())
        try await logger.flush()
        #expect(evaluations.current == 2)
        #expect(capture.records.map(\.message) == ["kept"])
        #expect(capture.records.first?.userInfo["userID"] == 42)
    }

    @Test func sanitizerRedactsBeforeAnyDestination() async throws {
        let capture = CapturingDestination()
        let inline = CapturingDestination(delivery: .inline)
        let logger = logger(
            [.init(capture), .init(inline)],
            sanitizer: { record in
                if record.userInfo["email"] != nil { record.userInfo["email"] = "<redacted>" }
                record.message = record.message.replacingOccurrences(of: "secret", with: "******")
                record.userInfo["quote"] = "\"}\n{\"forged\":true"
            }
        )
        logger.info("password is secret", userInfo: ["email": "jane@example.com"])
        try await logger.flush()
        for record in [capture.records[0], inline.records[0]] {
            #expect(record.userInfo["email"] == "<redacted>")
            #expect(record.message == "password is ******")
            let json = FlattenedFormat.encode(record)
            guard case .object(let object) = try JSONReader.parse(bytes: json) else {
                Issue.record("not an object")
                return
            }
            #expect(object["forged"] == nil, "a sanitizer cannot inject JSON members")
        }
    }

    @Test func inlineDestinationHasTheRecordBeforeTheCallReturns() {
        let inline = CapturingDestination(delivery: .inline)
        let logger = logger([.init(inline)])
        for index in 0..<100 {
            logger.info("inline \(index)")
            #expect(inline.records.count == index + 1)
        }
    }

    @Test func theLevelGateFollowsEveryReconfiguration() async throws {
        let warnings = CapturingDestination()
        let pipeline = LogPipeline(
            setup: .init(routes: [.init(warnings, minimumLevel: .warning)]),
            diagnostics: DiagnosticSink { _ in }
        )
        let logger = StructuredLogger(pipeline: pipeline)
        #expect(!pipeline.admits(.info) && pipeline.admits(.warning) && pipeline.admits(.error))
        logger.info("filtered out")
        let everything = CapturingDestination()
        _ = pipeline.reconfigure { .init(routes: [.init(everything)]) }
        #expect(pipeline.admits(.verbose))
        logger.verbose("taken")
        _ = pipeline.reconfigure { .init(routes: [.init(everything, minimumLevel: .error)]) }
        #expect(!pipeline.admits(.warning) && pipeline.admits(.error))
        logger.warning("filtered out again")
        try await logger.flush()
        #expect(warnings.records.isEmpty)
        #expect(everything.messages == ["taken"])
        await pipeline.shutdown()
    }

    @Test func fullQueueWaitsThenDropsCountsAndReports() async throws {
        let blocking = BlockingDestination()
        let capture = CapturingDestination()
        let diagnostics = LineCapture()
        let logger = logger(
            [.init(blocking), .init(capture)],
            pipeline: .init(capacity: 8, fullQueueWait: 0.01),
            diagnostics: diagnostics.diagnostics
        )
        for index in 0..<100 { logger.info("event \(index)") }
        let dropped = logger.pipeline.currentStatistics.dropped
        #expect(dropped > 0)
        #expect(dropped <= 92)
        #expect(diagnostics.text.contains("dropping events for the background destinations and counting them"))
        blocking.release()
        logger.info("after the stall")
        try await logger.flush()
        // Every drop is reported exactly once: usually in one report, in two when the worker took its first batch
        // after the first drop (a slow machine) — the reports add up to the count either way. The count is read
        // again: on a loaded machine (ThreadSanitizer in CI) the worker had not made room 10 ms after the release,
        // and "after the stall" was dropped too.
        let droppedInAll = logger.pipeline.currentStatistics.dropped
        #expect(droppedInAll == dropped || droppedInAll == dropped + 1)
        let reports = capture.records.filter { $0.message.hasPrefix("JustLog dropped") }
        #expect(!reports.isEmpty && reports.allSatisfy { $0.level == .warning })
        #expect(reportedDrops(in: reports) == droppedInAll)
        #expect(capture.records.count == 101 - Int(droppedInAll) + reports.count)
        #expect(diagnostics.writes.filter { $0.contains("dropping events") }.count == 1, "reported once, not per event")
    }

    /// A caller waiting for room in a full queue when the pipeline shuts down drops its event, counts it — and says
    /// it was the shutdown, not a destination that made no progress for `fullQueueWait` (it waited far less).
    @Test func aCallerWaitingForRoomWhenThePipelineShutsDownSaysTheShutdownDroppedItsEvent() async throws {
        let blocking = BlockingDestination()
        let diagnostics = LineCapture()
        let logger = logger(
            [.init(blocking)],
            pipeline: .init(capacity: 1, fullQueueWait: 600),
            diagnostics: diagnostics.diagnostics
        )
        let done = LockedValue(false)
        // On a thread: the third call waits for room (the worker holds the first, the queue the second).
        Thread.detachNewThread {
            for index in 0..<3 { logger.info("event \(index)") }
            done.withLock { $0 = true }
        }
        // The third call waits: two were submitted (one at the worker, one in the queue). A second call that found
        // the queue full for a moment, before the worker took the first, would also be one caller waiting.
        #expect(
            await eventually(timeout: .seconds(120)) {
                let statistics = logger.pipeline.currentStatistics
                return statistics.submitted == 2 && statistics.callersWaiting == 1
            }
        )
        let shutdown = Task.detached { await logger.pipeline.shutdown(timeout: 600) }
        #expect(await eventually(timeout: .seconds(120)) { done.current }, "the shutdown woke the waiting caller")
        #expect(logger.pipeline.currentStatistics.dropped == 1)
        #expect(diagnostics.text.contains("shut down"), "\(diagnostics.text)")
        #expect(!diagnostics.text.contains("made no progress"), "\(diagnostics.text)")
        blocking.release()
        #expect(await shutdown.value == nil)
    }

    @Test func oversizedMessagesAreBoundedByBytesNotJustCount() async throws {
        let blocking = BlockingDestination()
        let logger = logger(
            [.init(blocking)],
            pipeline: .init(capacity: 10_000, maximumQueuedBytes: 4 << 20, fullQueueWait: 0.01),
            diagnostics: LineCapture().diagnostics
        )
        let big = String(repeating: "x", count: 1 << 20)
        for _ in 0..<20 { logger.info(big) }
        let statistics = logger.pipeline.currentStatistics
        // At most 4 MiB wait in the queue and at most 4 MiB more sit in the batch the worker is writing.
        #expect(statistics.dropped >= 12, "no more than ~2 × 4 MiB of messages may be held")
        blocking.release()
        try await logger.flush()
    }

    @Test func shutdownFlushesAndLaterEventsAreCountedNotCrashing() async throws {
        let capture = CapturingDestination()
        let diagnostics = LineCapture()
        let logger = logger([.init(capture)], diagnostics: diagnostics.diagnostics)
        logger.info("before")
        #expect(await logger.pipeline.shutdown(timeout: 5) == nil)
        logger.info("after")
        #expect(capture.records.map(\.message) == ["before"])
        #expect(logger.pipeline.currentStatistics.dropped == 1)
        #expect(diagnostics.text.contains("after shutdown"))
        await #expect(throws: JustLogError.self) { try await logger.flush() }
    }

    /// Loggers that share a diagnostics sink (every logger's default is standard error) each say their own problems:
    /// the once-only reports are once per logger, not once per sink. Before, the second logger's events dropped
    /// after its shutdown went unsaid, as did a journal's or a file's failure after an earlier one on the same path.
    @Test func loggersSharingADiagnosticsSinkEachReportTheirOwnProblems() async throws {
        let diagnostics = LineCapture()
        let sink = diagnostics.diagnostics
        for _ in 0..<2 {
            let logger = logger([.init(CapturingDestination())], diagnostics: sink)
            #expect(await logger.pipeline.shutdown(timeout: 5) == nil)
            logger.info("after")
            logger.info("after, again")
        }
        #expect(diagnostics.writes.filter { $0.contains("after shutdown") }.count == 2, "\(diagnostics.writes)")
    }

    @Test func flushWithTimeoutReportsASlowDestination() {
        let blocking = BlockingDestination()
        let logger = logger([.init(blocking)])
        logger.info("stuck")
        let error = logger.pipeline.flush(timeout: 0.05)
        #expect((error as? JustLogError)?.code == .timeout)
        blocking.release()
        #expect(logger.pipeline.flush(timeout: 60) == nil)
    }

    @Test func aSanitizerThatShortensMessagesDoesNotShrinkTheQueue() async throws {
        // The byte bound must count what was queued, not the sanitized message: otherwise the queue
        // believes itself full until it drains (it then counts from zero again) and calls wait and drop. Each round queues more than the bound, so
        // its last calls wait for the worker; the patience is past any stall of the whole process (1 s and more
        // under ThreadSanitizer on a loaded machine), and the first round with a drop ends the test.
        let inline = CapturingDestination(delivery: .inline)
        let background = CapturingDestination()
        let logger = logger(
            [.init(inline), .init(background)],
            pipeline: .init(maximumQueuedBytes: 10_000, fullQueueWait: 5),
            sanitizer: { $0.message = "x" }
        )
        let big = String(repeating: "m", count: 1000)
        for round in 0..<20 {
            for _ in 0..<15 { logger.info(big) }
            try await logger.flush()
            try #require(logger.pipeline.currentStatistics.dropped == 0, "round \(round)")
        }
        #expect(background.records.count == 300)
    }

    @Test func infiniteTimeoutsDoNotTrap() {
        let logger = logger(
            [.init(CapturingDestination())],
            pipeline: .init(fullQueueWait: .infinity, exitFlushTimeout: .infinity)
        )
        logger.info("one")
        #expect(logger.pipeline.flush(timeout: .infinity) == nil)
        #expect(logger.pipeline.shutdown(timeout: .infinity) == nil)
    }

    @Test func aStalledBackgroundDestinationCostsTheInlineSpoolNothing() async throws {
        let blocking = BlockingDestination()
        let inline = CapturingDestination(delivery: .inline)
        let logger = logger(
            [.init(blocking), .init(inline)],
            pipeline: .init(capacity: 8, fullQueueWait: 0.01),
            diagnostics: LineCapture().diagnostics
        )
        for index in 0..<100 { logger.info("event \(index)") }
        #expect(logger.pipeline.currentStatistics.dropped > 0, "the stalled background destination missed events")
        #expect(
            inline.records.map(\.message) == (0..<100).map { "event \($0)" },
            "the inline destination got every one, in order"
        )
        blocking.release()
        try await logger.flush()
        #expect(inline.records.contains { $0.message.hasPrefix("JustLog dropped") }, "and the drop report")
    }

    /// A destination that flushes, reconfigures or shuts down its own pipeline would wait for itself — the flush and
    /// the shutdown out their timeouts (an hour here), the reconfiguration forever: each says so at once instead,
    /// and the pipeline goes on with the same destinations.
    @Test func waitingForThePipelineOnItsOwnThreadFailsAtOnceAndChangesNothing() async throws {
        let waiting = WaitingOnItsOwnThread { pipeline in
            [pipeline.flush(timeout: 3_600), pipeline.reconfigure { .init(routes: [.init(CapturingDestination())]) }]
        }
        let capture = CapturingDestination()
        let logger = logger([.init(waiting), .init(capture)])
        waiting.pipeline.withLock { $0 = logger.pipeline }
        logger.info("first")
        // On failure the pipeline's thread is left waiting: the test ends without flushing or shutting down.
        try #require(await eventually(timeout: .seconds(120)) { waiting.results != nil }, "the calls returned")
        #expect(waiting.results == ["pipelineThread", "pipelineThread"])
        logger.info("second")
        try await logger.flush()
        #expect(capture.records.map(\.message) == ["first", "second"], "still running, with the same destinations")
        #expect(await logger.pipeline.shutdown() == nil)
    }

    /// A shutdown on the pipeline's own thread can't wait for itself: it says so at once, and the pipeline stops once
    /// it has written what is queued — its destinations shut down, its thread ended — as a pipeline whose last
    /// reference is let go on its own thread must (its `deinit` shuts it down there). A shutdown called elsewhere
    /// meanwhile waits for that (it returned at once, with the destinations still writing).
    @Test func aShutdownOnThePipelinesOwnThreadStopsItOnceWhatIsQueuedIsWritten() async throws {
        let waiting = WaitingOnItsOwnThread(writeDelay: 0.2) { [$0.shutdown(timeout: 3_600)] }
        let logger = logger([.init(waiting)])
        waiting.pipeline.withLock { $0 = logger.pipeline }
        // The pipeline's thread held until all three are queued: the destination's shutdown call comes after them.
        let gate = LockedValue(false)
        logger.pipeline.performInOrder { while !gate.current { usleep(1_000) } }
        for index in 0..<3 { logger.info("event \(index)") }
        gate.withLock { $0 = true }
        try #require(await eventually(timeout: .seconds(120)) { waiting.results != nil }, "the call returned")
        #expect(waiting.results == ["pipelineThread"])
        #expect(await logger.pipeline.shutdown(timeout: 120) == nil)
        #expect(waiting.isShutDown, "the destinations were shut down when the shutdown returned")
        #expect(waiting.written == (0..<3).map { "event \($0)" }, "what was queued was written first")
        logger.info("after")
        #expect(logger.pipeline.currentStatistics.dropped == 1, "a stopped pipeline counts what comes later")
    }

    /// A pipeline whose last reference a destination lets go runs its `deinit` on its own thread, where the shutdown
    /// in it can't wait (with an hour's patience it would have held the thread that hour): it stops the pipeline,
    /// whose worker then writes what was queued, shuts the destinations down and closes the journal — unlocking its
    /// folder, with every event acknowledged.
    @Test func aPipelineLetGoOnItsOwnThreadWritesWhatIsQueuedAndClosesItsJournal() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let directory = folder.file("app.log.journal")
        // The destination logs two more events on the pipeline's thread, then lets go of the last reference.
        let waiting = WaitingOnItsOwnThread { pipeline in
            for index in 0..<2 {
                pipeline.submit(event("logged on the thread \(index)"))
            }
            return []
        }
        var pipeline: LogPipeline? = LogPipeline(
            setup: .init(
                routes: [.init(waiting)],
                configuration: .init(exitFlushTimeout: 3_600),
                journal: try EventJournal(configuration: .init(directory: directory))
            ),
            diagnostics: DiagnosticSink { _ in }
        )
        waiting.pipeline.withLock { $0 = pipeline }
        // The worker held until the test has let go: the destination's reference is then the last, and the three
        // events are queued before the two it logs.
        let gate = LockedValue(false)
        pipeline?.performInOrder { while !gate.current { usleep(1_000) } }
        for index in 0..<3 { pipeline?.submit(event("event \(index)")) }
        pipeline = nil
        gate.withLock { $0 = true }
        #expect(await eventually(timeout: .seconds(120)) { waiting.isShutDown }, "the destinations were shut down")
        #expect(waiting.written == (0..<3).map { "event \($0)" } + (0..<2).map { "logged on the thread \($0)" })
        // Open again only once the worker has closed the journal after shutting the destinations down.
        var reopened: EventJournal?
        #expect(
            await eventually(timeout: .seconds(120)) {
                reopened = try? EventJournal(
                    configuration: .init(directory: directory),
                    diagnostics: DiagnosticSink { _ in }
                )
                return reopened != nil
            },
            "the journal's folder was unlocked"
        )
        let next = CapturingDestination()
        let restarted = LogPipeline(setup: .init(routes: [.init(next)], journal: reopened))
        try await restarted.flush()
        #expect(next.records.isEmpty, "every event was acknowledged: nothing is recovered")
        await restarted.shutdown()
    }

    /// A `forceSend` completion that waits for another `forceSend`'s answer gets it: completions ran one at a time
    /// on one serial queue, so the nested answer queued behind the completion waiting for it — forever (review,
    /// helper-67).
    @Test func aCompletionWaitingForANestedForceSendIsAnswered() async throws {
        let destination = BlockingDestination()
        destination.release()
        let pipeline = LogPipeline(setup: .init(routes: [.init(destination)]), diagnostics: DiagnosticSink { _ in })
        pipeline.submit(Fixtures.event(.info, "before"))
        let nested = LockedValue<Bool?>(nil)
        pipeline.flush { _ in
            let answered = DispatchSemaphore(value: 0)
            pipeline.flush { _ in answered.signal() }
            let outcome = answered.wait(timeout: .now() + 60) == .success
            nested.withLock { $0 = outcome }
        }
        #expect(await eventually(timeout: .seconds(60)) { nested.current != nil })
        #expect(nested.current == true, "the nested forceSend's completion never ran")
        #expect(await offThePool { pipeline.shutdown(timeout: 10) } == nil)
    }

    /// A `forceSend` whose answer comes later on the very thread that asked — here the pipeline's own, in an action
    /// run in log order — gets it on another thread: it ran inline there, where `exit(0)` in it could not flush
    /// (review, helper-67).
    @Test func aLaterAnswerOnTheAskingThreadRunsOffIt() async throws {
        let destination = BlockingDestination()
        destination.release()
        let pipeline = LogPipeline(setup: .init(routes: [.init(destination)]), diagnostics: DiagnosticSink { _ in })
        let sameThread = LockedValue<Bool?>(nil)
        pipeline.performInOrder {
            let asking = pthread_self()
            pipeline.flush { _ in sameThread.withLock { $0 = pthread_equal(pthread_self(), asking) != 0 } }
        }
        #expect(await eventually(timeout: .seconds(60)) { sameThread.current != nil })
        #expect(sameThread.current == false, "the completion ran on the pipeline's own thread")
        #expect(await offThePool { pipeline.shutdown(timeout: 10) } == nil)
    }

    /// An answer given within the call (the pipeline shut down) still comes on the caller's thread, before the call
    /// returns.
    @Test func anAnswerWithinTheCallComesBeforeItReturns() async throws {
        let pipeline = LogPipeline(setup: .init(routes: []), diagnostics: DiagnosticSink { _ in })
        #expect(await offThePool { pipeline.shutdown(timeout: 10) } == nil)
        let answer = LockedValue<String?>(nil)
        pipeline.flush { error in answer.withLock { $0 = "\(error.map { "\($0)" } ?? "none")" } }
        #expect(answer.current?.contains("shut down") == true, "\(answer.current ?? "no answer yet")")
    }

    /// The exit handler, run within a completion that calls `exit`, waits for the other completions but not for
    /// that one: it waited its whole second for it, on every `forceSend { _ in exit(0) }` (review, helper-67).
    @Test func theExitWaitForCompletionsSkipsTheOneThatIsExiting() async throws {
        let waits = LockedValue<[Bool]?>(nil)
        let other = DispatchSemaphore(value: 0)
        let otherFinished = LockedValue(false)
        FlushCompletions.shared.run(
            { _ in
                other.wait()
                otherFinished.withLock { $0 = true }
            },
            with: nil
        )
        FlushCompletions.shared.run(
            { _ in
                // As `exit` would run the exit handler here: the other completion is still running; this one is
                // not counted.
                let whileTheOtherRuns = FlushCompletions.shared.waitForOthers(seconds: 0.2)
                other.signal()
                let once = FlushCompletions.shared.waitForOthers(seconds: 30)
                waits.withLock { $0 = [whileTheOtherRuns, once, otherFinished.current] }
            },
            with: nil
        )
        #expect(await eventually(timeout: .seconds(60)) { waits.current != nil })
        #expect(waits.current == [false, true, true], "waited for the other, and not for itself")
    }
}

private func event(_ message: String) -> LogEvent {
    LogEvent(
        level: .info,
        message: message,
        callSite: CallSite(file: #fileID, function: #function, line: #line),
        timestamp: .now()
    )
}

/// Takes `secondsPerRecord` per record: a destination that keeps moving, slowly.
/// Each write takes `secondsPerWrite`; the first waits until ``open()``.
private final class SlowDestination: LogDestination {
    private let secondsPerWrite: Double
    private let written = LockedValue(0)
    private let writeCount = LockedValue(0)
    /// When each write ended.
    private let writeEnds = LockedValue<[ContinuousClock.Instant]>([])
    private let gate = DispatchSemaphore(value: 0)

    init(secondsPerWrite: Double) {
        self.secondsPerWrite = secondsPerWrite
    }

    var count: Int { written.withLock { $0 } }
    var writes: Int { writeCount.withLock { $0 } }

    /// The longest the machine held the writes back, in seconds: how much later than due a write ended — the first
    /// `release` seconds after `start` (when its gate was to open) and a write's time, each later one a write's time
    /// after the one before.
    func longestHoldBack(since start: ContinuousClock.Instant, release: Double) -> Double {
        var due = start + .seconds(release)
        var longest = 0.0
        for end in writeEnds.current {
            longest = max(longest, (end - due).totalSeconds - secondsPerWrite)
            due = end
        }
        return longest
    }

    func open() { gate.signal() }

    func write(_ batch: LogBatch) {
        if count == 0 {
            gate.wait()
            gate.signal()
        }
        Thread.sleep(forTimeInterval: secondsPerWrite)
        written.withLock { $0 += batch.records.count }
        writeCount.withLock { $0 += 1 }
        writeEnds.withLock { $0.append(.now) }
    }
}

/// Takes `secondsPerRecord` for each record of a write.
private final class PerRecordSlowDestination: LogDestination {
    private let secondsPerRecord: Double
    private let state = LockedValue(
        (
            started: 0, finished: 0, written: 0, largest: 0, heldBack: 0.0,
            last: (start: ContinuousClock.Instant, asked: Double)?.none
        )
    )

    init(secondsPerRecord: Double) {
        self.secondsPerRecord = secondsPerRecord
    }

    var writesStarted: Int { state.current.started }
    /// No write under way.
    var isIdle: Bool { state.withLock { $0.started == $0.finished } }
    var count: Int { state.current.written }
    var largestWrite: Int { state.current.largest }
    /// The longest the machine held the pipeline's thread back, in seconds, as seen from here: how much longer than
    /// the write asked for it took from one write's start to the next's — the window in which a shutdown sees no
    /// progress (the pipeline shows it as it takes a batch, just before the write): the sleep's oversleep and the
    /// pipeline's own few milliseconds between two writes, unless its thread did not run — or, for the last write,
    /// its oversleep.
    var longestHoldBack: Double { state.current.heldBack }

    func write(_ batch: LogBatch) {
        let start = ContinuousClock.now
        let asked = secondsPerRecord * Double(batch.records.count)
        state.withLock { state in
            state.started += 1
            if let last = state.last {
                state.heldBack = max(state.heldBack, (start - last.start).totalSeconds - last.asked)
            }
            state.last = (start, asked)
        }
        Thread.sleep(forTimeInterval: asked)
        let end = ContinuousClock.now
        state.withLock { state in
            state.finished += 1
            state.written += batch.records.count
            state.largest = max(state.largest, batch.records.count)
            state.heldBack = max(state.heldBack, (end - start).totalSeconds - asked)
        }
    }
}

/// On its first write, calls what waits for the pipeline — by default a flush with a timeout, a reconfiguration and
/// a shutdown — from the pipeline's own thread, and keeps what each returned (an error's code).
private final class WaitingOnItsOwnThread: LogDestination {
    let pipeline = LockedValue<LogPipeline?>(nil)
    private let calls: @Sendable (LogPipeline) -> [(any Error)?]
    private let outcomes = LockedValue<[String]?>(nil)
    private let messages = LockedValue<[String]>([])
    private let shutDown = LockedValue(false)
    private let writeDelay: Double

    init(
        writeDelay: Double = 0,
        calls: @escaping @Sendable (LogPipeline) -> [(any Error)?] = { pipeline in
            [
                pipeline.flush(timeout: 3_600),
                pipeline.reconfigure { .init(routes: [.init(CapturingDestination())]) },
                pipeline.shutdown(timeout: 3_600),
            ]
        }
    ) {
        self.writeDelay = writeDelay
        self.calls = calls
    }

    /// What each call returned, once the write that made them returned.
    var results: [String]? { outcomes.current }
    /// The messages written, in order.
    var written: [String] { messages.current }
    var isShutDown: Bool { shutDown.current }

    func write(_ batch: LogBatch) {
        defer { Thread.sleep(forTimeInterval: writeDelay) }
        messages.withLock { $0 += batch.records.map(\.message) }
        // Let go of the pipeline (no cycle) as the calls are made.
        guard outcomes.current == nil, let pipeline = pipeline.withLock({ $0.take() }) else { return }
        let codes = calls(pipeline).map { error -> String in
            guard let error else { return "no error" }
            return (error as? JustLogError)?.code.description ?? "\(error)"
        }
        outcomes.withLock { $0 = codes }
    }

    func shutdown() {
        shutDown.withLock { $0 = true }
    }
}

/// Holds every flush until ``release()``; completes later ones at once.
private final class FlushHoldingDestination: LogDestination {
    private let held = LockedValue<[@Sendable ((any Error)?) -> Void]?>([])

    var heldCount: Int { held.withLock { $0?.count ?? 0 } }

    func write(_ batch: LogBatch) {}

    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        let holding = held.withLock { held -> Bool in
            held?.append(completion)
            return held != nil
        }
        if !holding { completion(nil) }
    }

    func release() {
        let completions = held.withLock { held in
            defer { held = nil }
            return held ?? []
        }
        for completion in completions { completion(nil) }
    }
}
