import Foundation
import JustLog
import JustLogCore

/// `exit-slow-destination FOLDER COUNT`: logs COUNT events to `child.log` through a destination that takes
/// 0.9 ms per record (a loaded machine, a slow disk), with an exit patience of 3 s — a third of the 9 s the
/// whole backlog of 10,000 needs at exit — and returns from main. The exit flush must wait while the destination
/// makes progress. (A write takes at most ~0.23 s, 256 records: the patience leaves ~2.7 s for the machine to hold the
/// pipeline's thread back, where a 1 s patience with 0.3 ms left ~0.9 s.)
func exitWithSlowDestination(folder: String, count: String) {
    let file = childLogFile(in: folder)
    let logger = StructuredLogger(
        configuration: .init(
            destinations: [.init(SlowDestination(file, delayPerRecord: 0.000_9))],
            pipeline: .init(exitFlushTimeout: 3)
        )
    )
    logChildEvents(count, to: logger)
    slowLogger = logger  // kept alive past main, as a logger stored in a global is
}

nonisolated(unsafe) var slowLogger: StructuredLogger?

/// A file destination writing `child.log` in `folder`; exits 1, saying why, if it can't be opened.
func childLogFile(in folder: String) -> FileDestination {
    do {
        return try FileDestination(
            configuration: .init(url: URL(fileURLWithPath: folder).appendingPathComponent("child.log"))
        )
    } catch {
        FileHandle.standardError.write(Data("can't open the log file: \(error)\n".utf8))
        exit(1)
    }
}

/// Logs `count` (a number; none if not one) events, "child event 0" onwards, each with its index.
func logChildEvents(_ count: String, to logger: StructuredLogger) {
    for index in 0..<(Int(count) ?? 0) {
        logger.info("child event \(index)", userInfo: ["index": index])
    }
}

/// `exit-stopped FOLDER COUNT`: logs COUNT events to `child.log` through a destination that takes 1 ms a record, with
/// an exit patience of 2 s, and returns from main. The first write that begins once the exit has begun stops the
/// process (SIGSTOP) half-way through, when the exit flush has seen the progress before it, after printing
/// `stopping`: the parent continues it (SIGCONT) after longer than the patience, and the write needs 0.15 s more.
///
/// `exit-stopped-stalled FOLDER COUNT`: the same, but once continued the destination never finishes that write: the
/// exit flush must still give up, after its patience of running time, and say what it left.
func exitToBeStopped(folder: String, count: String, stallingAfterTheStop: Bool = false) {
    let file = childLogFile(in: folder)
    let stopping = StoppingDestination(
        SlowDestination(file, delayPerRecord: 0.001),
        stallingAfterTheStop: stallingAfterTheStop
    )
    let logger = StructuredLogger(
        configuration: .init(destinations: [.init(stopping)], pipeline: .init(exitFlushTimeout: 2))
    )
    stoppingDestination = stopping
    // Registered after the logger's exit handler, so run just before it: the exit flush begins right after.
    atexit { stoppingDestination?.exitBegins() }
    logChildEvents(count, to: logger)
    slowLogger = logger
}

nonisolated(unsafe) var stoppingDestination: StoppingDestination?

/// Once ``exitBegins()`` was called, stops the process in the middle of its next write: 0.15 s in (the exit flush,
/// which looks at progress every 0.1 s, has seen the write begin), and 0.15 s before the write ends — or, with
/// `stallingAfterTheStop`, never ends it.
final class StoppingDestination: LogDestination {
    let next: any LogDestination
    let stallingAfterTheStop: Bool
    private let state = LockedValue((exiting: false, stopped: false))

    init(_ next: any LogDestination, stallingAfterTheStop: Bool = false) {
        self.next = next
        self.stallingAfterTheStop = stallingAfterTheStop
    }

    func exitBegins() {
        state.withLock { $0.exiting = true }
    }

    func write(_ batch: LogBatch) {
        let stop = state.withLock { state in
            defer { if state.exiting { state.stopped = true } }
            return state.exiting && !state.stopped
        }
        if stop {
            Thread.sleep(forTimeInterval: 0.15)
            stopThisProcess()
            // The process exits while this thread sleeps.
            while stallingAfterTheStop { Thread.sleep(forTimeInterval: 3_600) }
        }
        next.write(batch)
    }

    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) { next.flush(completion: completion) }
    func shutdown() { next.shutdown() }
}

/// Prints `stopping` and stops the process (SIGSTOP) until the parent continues it; then sleeps 0.15 s, so that what
/// waited for this thread wakes before it moves on.
func stopThisProcess() {
    FileHandle.standardOutput.write(Data("stopping\n".utf8))
    kill(getpid(), SIGSTOP)
    Thread.sleep(forTimeInterval: 0.15)
}

/// `full-queue-stopped FOLDER COUNT`: logs COUNT events to `child.log` through a destination that takes 1 ms a
/// record, into a queue of 16 with a full-queue wait of 1 s; in its second write, once a log call waits for room,
/// the destination stops the process (see ``stopThisProcess()``). The parent continues it after longer than the
/// wait; the waiting call must not count the time stopped, and drop nothing. Prints `dropped N` and exits 0.
func fullQueueToBeStopped(folder: String, count: String) -> Never {
    let file = childLogFile(in: folder)
    let stopping = StoppingWhileACallerWaits(SlowDestination(file, delayPerRecord: 0.001))
    let logger = StructuredLogger(
        configuration: .init(
            destinations: [.init(stopping)],
            pipeline: .init(capacity: 16, fullQueueWait: 1, exitFlushTimeout: 60)
        )
    )
    stopping.watch(logger.pipeline)
    logChildEvents(count, to: logger)
    _ = logger.pipeline.shutdown(timeout: 60)
    FileHandle.standardOutput.write(Data("dropped \(logger.pipeline.currentStatistics.dropped)\n".utf8))
    exit(0)
}

/// In its second write, waits (at most 60 s) until a log call waits for room in the watched pipeline's queue, then
/// stops the process (``stopThisProcess()``).
final class StoppingWhileACallerWaits: LogDestination {
    let next: any LogDestination
    private let state = LockedValue((pipeline: LogPipeline?.none, writes: 0))

    init(_ next: any LogDestination) {
        self.next = next
    }

    func watch(_ pipeline: LogPipeline) {
        state.withLock { $0.pipeline = pipeline }
    }

    func write(_ batch: LogBatch) {
        let (pipeline, writes) = state.withLock { state in
            state.writes += 1
            return (state.pipeline, state.writes)
        }
        if writes == 2, let pipeline {
            let deadline = Date().addingTimeInterval(60)
            while pipeline.currentStatistics.callersWaiting == 0, Date() < deadline {
                Thread.sleep(forTimeInterval: 0.001)
            }
            // Into the wait's own sleep, not at its start.
            Thread.sleep(forTimeInterval: 0.05)
            stopThisProcess()
        }
        next.write(batch)
    }

    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) { next.flush(completion: completion) }
    func shutdown() { next.shutdown() }
}

/// Forwards to another destination after sleeping `delayPerRecord` seconds per record.
final class SlowDestination: LogDestination {
    let next: any LogDestination
    let delayPerRecord: Double

    init(_ next: any LogDestination, delayPerRecord: Double) {
        self.next = next
        self.delayPerRecord = delayPerRecord
    }

    func write(_ batch: LogBatch) {
        Thread.sleep(forTimeInterval: delayPerRecord * Double(batch.records.count))
        next.write(batch)
    }

    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) { next.flush(completion: completion) }
    func shutdown() { next.shutdown() }
}

/// `exit-from-destination`: a destination calls `exit(3)` on its first write, with an exit patience of an hour; the
/// exit flush must not wait for the pipeline whose own thread is exiting (it can't write meanwhile), and says what
/// it left.
func exitFromDestination() -> Never {
    let logger = StructuredLogger(
        configuration: .init(
            destinations: [.init(ExitingDestination())],
            pipeline: .init(exitFlushTimeout: 3_600)
        )
    )
    for index in 0..<100 {
        logger.info("child event \(index)")
    }
    exitingLogger = logger
    while true { Thread.sleep(forTimeInterval: 3_600) }
}

nonisolated(unsafe) var exitingLogger: StructuredLogger?

/// `exit-in-forcesend FOLDER VARIANT PORT`: `Logger.shared` with its file — and, for the variant `file+logstash`,
/// Logstash on 127.0.0.1:PORT (plain TCP) — and an exit patience of an hour; logs "child event <i>" 100 times, then
/// exits with status 0 from `forceSend`'s completion, as a command-line tool does when its work is done.
func exitInForceSend(_ logger: JustLog.Logger, variant: String, port: String) -> Never {
    logger.pipelineConfiguration.exitFlushTimeout = 3_600
    if variant == "file+logstash" {
        logger.logstashHost = "127.0.0.1"
        logger.logstashPort = UInt16(port) ?? 0
        logger.logstashUseTLS = false
    }
    logger.setup()
    for index in 0..<100 { logger.info("child event \(index)") }
    logger.forceSend { error in
        if let error { FileHandle.standardError.write(Data("forceSend: \(error)\n".utf8)) }
        exit(0)
    }
    while true { Thread.sleep(forTimeInterval: 3_600) }
}

/// Calls `exit(3)` on its first write.
final class ExitingDestination: LogDestination {
    func write(_ batch: LogBatch) { exit(3) }
}

/// `exit-flush-error`: a destination whose flush fails with a `.shutdown` error (as a Logstash destination whose
/// client is not running says), with an exit patience of an hour. The pipeline is running: the exit handler must
/// not wait for its worker to finish (it would wait the whole hour, and then say it made no progress).
func exitWithAFlushError() {
    let logger = StructuredLogger(
        configuration: .init(destinations: [.init(FailingFlushDestination())], pipeline: .init(exitFlushTimeout: 3_600))
    )
    for index in 0..<10 { logger.info("child event \(index)") }
    failingFlushLogger = logger  // kept alive past main, as a logger stored in a global is
}

nonisolated(unsafe) var failingFlushLogger: StructuredLogger?

/// Writes nothing; its flush fails, saying that it is not running.
final class FailingFlushDestination: LogDestination {
    func write(_ batch: LogBatch) {}
    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        completion(JustLogError(.shutdown, "the client is not running"))
    }
}

/// `setup-close-failure`: the documented logger, with a destination of its own whose flush fails with a `.shutdown`
/// error (as a Logstash destination's does when it stopped while reconnecting), set up, then set up again without
/// it. The second `setup()` did change the destinations: stderr must say the previous ones did not close cleanly,
/// not that nothing changed.
func setupWithAFailingCloseThenWithout(_ logger: JustLog.Logger, folder: String) {
    logger.baseUrlForFileLogging = URL(fileURLWithPath: folder)
    logger.logFilename = "child.log"
    logger.enableConsoleLogging = false
    logger.enableLogstashLogging = false
    logger.additionalDestinations = [.init(FailingFlushDestination())]
    logger.setup()
    logger.info("before the second setup")
    logger.additionalDestinations = []
    logger.setup()
    logger.info("after the second setup")
    logger.forceSend()
    print("done")
}
