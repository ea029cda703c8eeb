import CJustLogAtomics
package import Foundation
package import JustLog
import JustLogCore
import JustLogLogging
import JustLogLogstash
import JustLogReceivers
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `justlog bench`: what a log call costs its caller, and how many events per second reach a file and a
/// collector, side by side with baselines measured in the same run. Build in release
/// (`swift run -c release justlog bench`): debug figures mean little.
///
/// Every case logs the same event, the one of the README: `info("user signed in", userInfo: ["userID": 42,
/// "plan": "gold", "attempt": 1])`.
///
/// - **Per call** (on the caller's thread): each call is timed alone with `CLOCK_MONOTONIC` (the clock read
///   itself is a row of the table), in bursts of ``burst`` calls that fit the pipeline's queue, each followed
///   by an untimed drain; the p50 and p99 of all calls are reported. Allocations are counted around
///   ``allocationCalls`` calls on the caller's thread by the injected ``AllocationCounting`` (the tool's
///   counter is ordo-one's malloc interposer) and divided by the number of calls.
/// - **Throughput** (end to end): the time from the first call until the file is flushed, or until the
///   collector (a ``LoopbackSink`` on 127.0.0.1) has read every line, beside the limits of the same bytes
///   written without a logger: preformatted lines in 64 KiB `write(2)` calls, to a file and to the socket.
package struct BenchSuite: Sendable {
    /// How much to measure.
    package struct Options: Sendable {
        /// Calls timed per per-call case.
        package var callSamples: Int
        /// Events per throughput case.
        package var throughputEvents: Int
        /// Calls whose allocations are counted per per-call case.
        package var allocationCalls: Int

        package init(callSamples: Int, throughputEvents: Int, allocationCalls: Int = 1000) {
            self.callSamples = max(1, callSamples)
            self.throughputEvents = max(1, throughputEvents)
            self.allocationCalls = min(max(1, allocationCalls), 4096)
        }

        /// The full run (about half a minute on a 2-core machine).
        package static let full = Options(callSamples: 200_000, throughputEvents: 500_000)
        /// `--quick`: a few seconds on a 2-core machine (the command promises under a minute).
        package static let quick = Options(callSamples: 20_000, throughputEvents: 50_000, allocationCalls: 500)
    }

    /// Calls per timed burst, each followed by an untimed drain: well below the queue's 16 384 events, so
    /// the caller's own cost is measured, not the back-pressure of a sustained overload.
    package static let burst = 1024

    package var options: Options
    /// A scratch folder (log files, spools); the suite removes what it creates.
    package var folder: URL
    package var allocationCounter: any AllocationCounting
    /// The logger of the documented calls, set up here with the property-style API (file + Logstash on).
    package var logger: JustLog.Logger

    package init(
        options: Options,
        folder: URL,
        allocationCounter: any AllocationCounting,
        logger: JustLog.Logger = .shared
    ) {
        self.options = options
        self.folder = folder
        self.allocationCounter = allocationCounter
        self.logger = logger
    }

    /// Runs every case and returns the report.
    package func run() throws -> BenchReport {
        let machine = BenchReport.Machine.current
        let sink = try LoopbackSink()
        defer { sink.stop() }
        let cases = try CallCases(folder: folder, logger: logger, collectorPort: sink.port)
        defer { cases.tearDown() }
        var calls: [CallMeasurement] = []
        for callCase in cases.all {
            calls.append(measure(callCase))
        }
        let concurrency = measureConcurrency(cases, sink: sink)
        let throughput = ThroughputCases(folder: folder, events: options.throughputEvents)
        return BenchReport(
            calls: calls,
            concurrency: concurrency,
            throughput: try throughput.run(),
            machine: machine,
            options: options,
            allocationCounter: allocationCounter.unavailableReason.map { "unavailable: \($0)" }
                ?? "malloc-interposer, caller's thread"
        )
    }

    /// The documented call and the literal alone, each from one thread and from as many threads as cores (at
    /// least 2): see ``ConcurrencyMeasurement``.
    private func measureConcurrency(
        _ cases: CallCases,
        sink: LoopbackSink,
        of key: String = "hot_path"
    ) -> ConcurrencyMeasurement {
        let measured = cases.all.first { $0.key == key }!
        let literal = cases.all.first { $0.key == "literal" }!
        let threads = max(2, ProcessInfo.processInfo.activeProcessorCount)
        // Each case's rounds start once the collector has every line sent so far: the Logstash backlog of the cases
        // before, delivered by two more threads (the client's and the sink's), would take the cores' time from
        // whichever rounds it fell in. Not before every round: a core that idles while the collector goes quiet
        // comes back slower, and a one-thread round, which leaves the other core idle, lost more to it than a
        // two-thread round did (the ratios came out high).
        let settle = { sink.waitUntilQuiet(for: 0.005, timeout: 10) }
        return ConcurrencyMeasurement(
            threads: threads,
            key: key,
            documented: scaling(of: measured, threads: threads, settle: settle),
            literal: scaling(of: literal, threads: threads, settle: settle)
        )
    }

    /// The keys of the per-call cases, for ``runCalls(_:count:)``.
    package static var callKeys: [String] { CallCases.keys }

    /// The most calls ``runCalls(_:count:)`` makes: they fit the pipeline's queue, so no drain runs between them.
    package static let maximumUnmeasuredCalls = 10_000

    /// Makes `count` calls of the case `key` and nothing else (no timing, no counting): what
    /// `Benchmarks/callgrind.sh` runs under `valgrind --tool=callgrind` to count instructions per call.
    package func runCalls(_ key: String, count: Int) throws {
        guard (1...Self.maximumUnmeasuredCalls).contains(count) else {
            throw ToolError("--calls must be 1…\(Self.maximumUnmeasuredCalls)", exitCode: 64)
        }
        guard CallCases.keys.contains(key) else {
            let all = CallCases.keys + Self.throughputKeys + [Self.concurrencyKey]
            throw ToolError("no case \(key); cases: \(all.joined(separator: ", "))", exitCode: 64)
        }
        let sink = try LoopbackSink()
        defer { sink.stop() }
        let cases = try CallCases(folder: folder, logger: logger, collectorPort: sink.port)
        defer { cases.tearDown() }
        let callCase = cases.all.first { $0.key == key }!
        // The same warm-up as a measured run, so that first-use costs stay out of both of the script's runs.
        for index in 0..<Self.burst { callCase.call(index) }
        callCase.drain()
        measuredCalls(callCase, count: count)
        callCase.drain()
    }

    /// The keys of ``runThroughput(_:)``'s cases.
    package static let throughputKeys = [
        "throughput_file", "throughput_file_fields", "throughput_logstash", "throughput_logstash_fields",
    ]

    /// The key of ``runConcurrency(of:)``.
    package static let concurrencyKey = "concurrency"

    /// Measures only the caller threads at once (the documented call — or the per-call case `key` — and the literal
    /// alone; see ``ConcurrencyMeasurement``): for a profiler, or for many runs of the one figure. Another case than
    /// the documented call shows what its share of the work does to the figure (`message_only`: the submission
    /// alone, with hardly any work of the caller's own beside it).
    package func runConcurrency(of key: String = "hot_path") throws -> ConcurrencyMeasurement {
        guard CallCases.keys.contains(key), key != "literal" else {
            let keys = CallCases.keys.filter { $0 != "literal" }
            throw ToolError(
                "no per-call case \(key) to measure from several threads; cases: \(keys.joined(separator: ", "))",
                exitCode: 64
            )
        }
        let sink = try LoopbackSink()
        defer { sink.stop() }
        let cases = try CallCases(folder: folder, logger: logger, collectorPort: sink.port)
        defer { cases.tearDown() }
        for callCase in cases.all where callCase.key == key || callCase.key == "literal" {
            // What a whole run does before: each case measured alone, which also takes the journal once around
            // its segments (rounds that page-fault fresh segments measure the kernel's mapping lock).
            _ = measure(callCase)
        }
        return measureConcurrency(cases, sink: sink, of: key)
    }

    /// Runs one end-to-end case alone (`throughput_file`, `throughput_file_fields` — the same event through
    /// `fields:` —, `throughput_logstash` or `throughput_logstash_fields`, with ``Options/throughputEvents``
    /// events) and returns its events per second: for a profiler to look at one case.
    package func runThroughput(_ key: String) throws -> Double {
        let cases = ThroughputCases(folder: folder, events: options.throughputEvents)
        switch key {
        case "throughput_file": return try cases.fileEventsPerSecond().0
        case "throughput_file_fields": return try cases.fileEventsPerSecond(typed: true).0
        case "throughput_logstash": return try cases.logstashEventsPerSecond().0
        case "throughput_logstash_fields": return try cases.logstashEventsPerSecond(typed: true).0
        default:
            throw ToolError("no case \(key); cases: \(Self.throughputKeys.joined(separator: ", "))", exitCode: 64)
        }
    }

    /// The calls `Benchmarks/callgrind.sh` counts; its name is what the script finds in the profile.
    @inline(never)
    func measuredCalls(_ callCase: CallCase, count: Int) {
        for index in 0..<count { callCase.call(index) }
    }

    /// Calls per second of one thread, and of `threads` threads calling at once, in rounds of half a ``burst`` of
    /// calls per thread (all of them fit the queue), each round timed from its start until every thread is done,
    /// then drained untimed; `settle` runs once, before the first round.
    ///
    /// The one-thread and the many-thread rounds alternate, so that whatever the machine does meanwhile (a
    /// neighbour's load, the clock speed) weighs on both sides of the ratio alike: measured one after the other,
    /// a drift between the two went into the ratio whole. The threads are this one and
    /// `threads - 1` of their own, started once; before each many-thread round they are awake and spinning, so
    /// that no thread's wake-up is timed (`DispatchQueue.concurrentPerform` woke a worker inside every round: tens
    /// of microseconds of a round of a few hundred, charged to the logger). Between those rounds they sleep.
    ///
    /// Each caller runs on a core of its own (``CorePinning``, when the process may use as many cores as there are
    /// threads): left to the scheduler, the second caller was now and then woken onto the first one's core while the
    /// drain's threads still ran on the other, and started ~200 µs — most of a round — late (BENCHMARKS.md part 16).
    private func scaling(
        of callCase: CallCase,
        threads: Int,
        settle: () -> Void
    ) -> ThreadScaling {
        let perThread = Self.burst / 2
        let rounds = max(1, options.callSamples / (perThread * threads))
        let barrier = RoundBarrier(workers: threads - 1)
        let pinning = CorePinning()
        let pinned = pinning.cores.count >= threads
        if pinned { CorePinning.pinCurrentThread(to: pinning.cores[0]) }
        defer { if pinned { pinning.restore() } }
        for worker in 1..<threads {
            Thread.detachNewThread {
                if pinned { CorePinning.pinCurrentThread(to: pinning.cores[worker]) }
                while barrier.awaitRound() {
                    for index in 0..<perThread { callCase.call(index) }
                    barrier.finished(at: monotonicNanoseconds())
                }
            }
        }
        defer { barrier.stop() }
        var oneElapsed: UInt64 = 0
        var manyElapsed: UInt64 = 0
        var roundRatios: [Double] = []
        roundRatios.reserveCapacity(rounds)
        settle()
        for _ in 0..<rounds {
            let alone = monotonicNanoseconds()
            for index in 0..<perThread { callCase.call(index) }
            let oneRound = monotonicNanoseconds() - alone
            oneElapsed += oneRound
            callCase.drain()

            barrier.prepare()
            let start = monotonicNanoseconds()
            barrier.go()
            for index in 0..<perThread { callCase.call(index) }
            let finished = max(monotonicNanoseconds(), barrier.waitForWorkers())
            let manyRound = max(finished - start, 1)
            manyElapsed += manyRound
            roundRatios.append(Double(threads) * Double(oneRound) / Double(manyRound))
            callCase.drain()
        }
        let calls = Double(rounds * perThread)
        roundRatios.sort()
        return ThreadScaling(
            oneThreadCallsPerSecond: calls * 1e9 / Double(max(oneElapsed, 1)),
            manyThreadsCallsPerSecond: calls * Double(threads) * 1e9 / Double(max(manyElapsed, 1)),
            medianRoundRatio: roundRatios[roundRatios.count / 2]
        )
    }

    private func measure(_ callCase: CallCase) -> CallMeasurement {
        // Warm-up: first-use costs (lazy globals, the connection, the spool's first pages) stay out.
        for index in 0..<min(Self.burst, options.callSamples) { callCase.call(index) }
        callCase.drain()

        // At most a few thousand calls: they fit the queue, so no drain runs inside the count.
        let counted = allocationCounter.count {
            for index in 0..<options.allocationCalls { callCase.call(index) }
        }
        callCase.drain()

        var samples = [UInt64](repeating: 0, count: options.callSamples)
        var done = 0
        samples.withUnsafeMutableBufferPointer { samples in
            while done < samples.count {
                let end = min(done + Self.burst, samples.count)
                for index in done..<end {
                    let start = monotonicNanoseconds()
                    callCase.call(index)
                    samples[index] = monotonicNanoseconds() - start
                }
                callCase.drain()
                done = end
            }
        }
        samples.sort()
        let calls = Double(options.allocationCalls)
        return CallMeasurement(
            key: callCase.key,
            label: callCase.label,
            nanosecondsP50: Double(samples[samples.count / 2]),
            nanosecondsP99: Double(samples[min(samples.count - 1, samples.count * 99 / 100)]),
            allocationsPerCall: counted.map { Double($0.allocations) / calls },
            allocatedBytesPerCall: counted.map { Double($0.bytes) / calls }
        )
    }
}

/// One per-call case: what a call does and how to wait for its background work. Sendable: the concurrency
/// measurement makes the same call from several threads at once.
struct CallCase: Sendable {
    var key: String
    var label: String
    var call: @Sendable (Int) -> Void
    var drain: @Sendable () -> Void = {}
}

/// The documented call from one thread and from several at once (as many as cores, at least 2): whether
/// logging threads wait for each other.
///
/// The literal alone, measured the same way, is the machine's share of the figure: its threads share nothing (each
/// has its own malloc arena), so whatever keeps its ratio below `threads` — cores the hypervisor shares, caches, the
/// clock — bounds the documented call's ratio too.
package struct ConcurrencyMeasurement: Sendable {
    package var threads: Int
    /// The per-call case ``documented`` measured: `hot_path`, the documented call, unless another was asked for.
    package var key = "hot_path"
    package var documented: ThreadScaling
    package var literal: ThreadScaling

    /// One line: each side's ratios of many threads to one, and their calls per second.
    package var summary: String {
        func side(_ name: String, _ scaling: ThreadScaling) -> String {
            "\(name) \(String(format: "%.2f", scaling.ratio))× (median round \(String(format: "%.2f", scaling.medianRoundRatio))×; "
                + "\(Int(scaling.oneThreadCallsPerSecond)) → \(Int(scaling.manyThreadsCallsPerSecond)) calls/s)"
        }
        return
            "concurrency, \(threads) threads ÷ 1: \(side(key == "hot_path" ? "documented call" : key, documented)), \(side("literal alone", literal))\n"
    }
}

/// One case's calls per second from one thread and from several, in alternating rounds (see
/// `BenchSuite.scaling`).
package struct ThreadScaling: Sendable {
    package var oneThreadCallsPerSecond: Double
    package var manyThreadsCallsPerSecond: Double
    /// The median over rounds of (threads × a one-thread round's time ÷ the many-thread round's after it): the same
    /// ratio as ``ratio``, which a round in which the machine stalled a thread no longer drags down.
    package var medianRoundRatio: Double

    /// Aggregate calls per second of the many threads ÷ one thread's, over all rounds.
    package var ratio: Double { manyThreadsCallsPerSecond / max(oneThreadCallsPerSecond, 1) }
}

/// What one per-call case measured.
package struct CallMeasurement: Sendable {
    package var key: String
    package var label: String
    package var nanosecondsP50: Double
    package var nanosecondsP99: Double
    /// Allocations per call on the caller's thread (`nil`: not counted in this process).
    package var allocationsPerCall: Double?
    package var allocatedBytesPerCall: Double?
}

/// Starts rounds of work on a few threads at the same instant: between rounds the workers sleep; ``prepare()`` wakes
/// them and returns once each is spinning, ready, so that ``go()`` starts them all at once.
private final class RoundBarrier: @unchecked Sendable {
    private struct State {
        var round = 0
        var ready = 0
        var lastFinish: UInt64 = 0
        var stopped = false
    }

    private let workers: Int
    private let state = LockedValue(State())
    /// The round started last, which the workers spin on reading only: a worker that took `state`'s lock to look
    /// would keep ``go()`` from taking it inside the timed round.
    private let startedRound = CacheLine.allocate(repeating: UInt64(0))
    /// The round ``prepare()`` woke the workers for (the measuring thread's own copy).
    private var preparedRound: UInt64 = 0
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(workers: Int) {
        self.workers = workers
    }

    deinit {
        CacheLine.deallocate(startedRound)
    }

    /// Wakes the workers for the next round and waits until every one is ready.
    func prepare() {
        preparedRound = UInt64(
            state.withLock {
                $0.round += 1
                $0.ready = 0
                $0.lastFinish = 0
                return $0.round
            }
        )
        for _ in 0..<workers { wake.signal() }
        while state.withLock({ $0.ready }) < workers { sched_yield() }
    }

    /// Starts the round prepared.
    func go() {
        cjustlog_atomic_store_release_u64(startedRound, preparedRound)
    }

    /// A worker: waits for a round and spins until it starts; `false` once stopped.
    func awaitRound() -> Bool {
        wake.wait()
        let round = state.withLock { state -> Int? in
            guard !state.stopped else { return nil }
            state.ready += 1
            return state.round
        }
        guard let round else { return false }
        while cjustlog_atomic_load_acquire_u64(startedRound) != UInt64(round) { cjustlog_cpu_relax() }
        return true
    }

    /// A worker finished its calls at `instant`.
    func finished(at instant: UInt64) {
        state.withLock { $0.lastFinish = max($0.lastFinish, instant) }
        done.signal()
    }

    /// Waits until every worker finished this round; returns when the last one did (0 without workers).
    func waitForWorkers() -> UInt64 {
        for _ in 0..<workers { done.wait() }
        return state.withLock { $0.lastFinish }
    }

    /// Lets the workers end.
    func stop() {
        state.withLock { $0.stopped = true }
        for _ in 0..<workers { wake.signal() }
    }
}
