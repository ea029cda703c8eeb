// JustLog's benchmarks: what one log call costs its caller, and how many events per second reach a file and a
// collector, beside baselines measured in the same run. Every case logs the same event as `justlog bench`:
// info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1]).
//
// Per call, one call per sample (explicit start/stop; the pipeline is drained between bursts, untimed):
// wall clock, `instructions` (perf events; "not supported" on machines without them: Benchmarks/callgrind.sh
// counts them there), `mallocCountTotal` (every thread of the process, ordo-one's malloc interposer) and
// `callerMallocs` (the caller's thread only — the pipeline's and network threads allocate too).
import Benchmark
import Foundation
import JustLog
import JustLogCore
import JustLogLogging
import Logging
import MallocInterposerSwift
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Allocations on the benchmark's own thread, per call.
var callerMallocs: BenchmarkMetric { .custom("callerMallocs", polarity: .prefersSmaller, useScalingFactor: false) }

/// Allocation counts exact, instructions within 5 %, on the p90 that the thresholds files record
/// (`swift package --package-path Benchmarks benchmark thresholds check`).
var exactAllocations: [BenchmarkMetric: BenchmarkThresholds] {
    [
        .instructions: .init(relative: [.p90: 5.0]),
        .mallocCountTotal: .init(absolute: [.p90: 0]),
        callerMallocs: .init(absolute: [.p90: 0]),
    ]
}

/// For cases with background threads, whose allocations land in `mallocCountTotal` at random moments: only
/// the caller's count is exact.
var exactCallerAllocations: [BenchmarkMetric: BenchmarkThresholds] {
    [
        .instructions: .init(relative: [.p90: 5.0]),
        callerMallocs: .init(absolute: [.p90: 0]),
    ]
}

var perCallMetrics: [BenchmarkMetric] { [.wallClock, .instructions, .mallocCountTotal, callerMallocs] }

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: perCallMetrics,
        timeUnits: .nanoseconds,
        warmupIterations: 1000,
        maxDuration: .seconds(3),
        maxIterations: 50_000
    )

    perCall("baseline: 3-entry [String: Any] literal alone", thresholds: exactAllocations) { _ in
        BlackHole.keep(["userID": 42, "plan": "gold", "attempt": 1] as [String: Any])
    }
    perCall("filtered out (debug below warning), 3-field literal", thresholds: exactAllocations) { fixture in
        fixture.filtered.debug("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
    }
    perCall("Logger.shared info, no userInfo (file + Logstash)", drains: true) { _ in
        JustLog.Logger.shared.info("user signed in")
    }
    perCall("Logger.shared info + 3 fields (file + Logstash)", drains: true) { _ in
        JustLog.Logger.shared.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
    }
    perCall("Logger.shared error + NSError chain (file + Logstash)", drains: true) { fixture in
        JustLog.Logger.shared.error("payment failed", error: fixture.chainedError)
    }
    perCall("swift-log bridge (JustLogLogHandler), 3 fields", drains: true) { fixture in
        fixture.bridge.info("user signed in", metadata: ["userID": .stringConvertible(42), "plan": "gold", "attempt": .stringConvertible(1)])
    }
    perCall("baseline: swift-log StreamLogHandler to a file, 3 fields", thresholds: exactAllocations) { fixture in
        fixture.streamLogger.info("user signed in", metadata: ["userID": .stringConvertible(42), "plan": "gold", "attempt": .stringConvertible(1)])
    }

    // End to end: each sample is 10 000 events, from the first call until the file is flushed or the sink
    // has read every line. `throughput` is then batches per second: × 10 000 for events per second.
    endToEnd("file: 10k events until flushed (rotating file)") { fixture in try fixture.fileBatch() }
    endToEnd("baseline: file limit, 10k preformatted lines in 64 KiB write(2)s") { fixture in try fixture.fileLimitBatch() }
    endToEnd("Logstash: 10k events until a loopback sink read them") { fixture in try fixture.logstashBatch() }
    endToEnd("baseline: TCP limit, 10k preformatted lines in 64 KiB writes") { fixture in try fixture.tcpLimitBatch() }
}

/// One call per sample, timed and counted alone; with `drains`, the pipeline is flushed (untimed) every 1024 calls
/// so that the queue never fills and the caller's own cost is measured, not back-pressure.
func perCall(
    _ name: String,
    thresholds: [BenchmarkMetric: BenchmarkThresholds] = exactCallerAllocations,
    drains: Bool = false,
    _ call: @escaping (Fixture) -> Void
) {
    Benchmark(name, configuration: .init(thresholds: thresholds)) { benchmark in
        let fixture = Fixture.shared
        if drains, fixture.calls % 1024 == 0 { fixture.drain() }
        fixture.calls += 1
        benchmark.startMeasurement()
        CallerAllocations.start()
        call(fixture)
        let allocations = CallerAllocations.stop()
        benchmark.stopMeasurement()
        benchmark.measurement(callerMallocs, allocations)
    }
}

func endToEnd(_ name: String, _ batch: @escaping (Fixture) throws -> Void) {
    Benchmark(name, configuration: .init(
        metrics: [.wallClock, .throughput], warmupIterations: 1, maxDuration: .seconds(5), maxIterations: 100
    )) { benchmark in
        do {
            try batch(Fixture.shared)
        } catch {
            benchmark.error("\(error)")
        }
    }
}

/// Keeps a value past the optimizer: the literal baseline must build its literal.
enum BlackHole {
    nonisolated(unsafe) private static var last: Any?

    @inline(never)
    static func keep(_ value: Any) { last = value }
}

/// Counts the allocations of the benchmark's thread with the malloc interposer's per-allocation hook.
enum CallerAllocations {
    nonisolated(unsafe) private static var tally = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static func start() {
        tally.pointee = 0
        pthread_setspecific(key, tally)
        MallocInterposerSwift.setAllocationHook { _ in
            guard let slot = pthread_getspecific(CallerAllocations.key) else { return }
            slot.assumingMemoryBound(to: Int.self).pointee += 1
        }
    }

    static func stop() -> Int {
        MallocInterposerSwift.setAllocationHook(nil)
        pthread_setspecific(key, nil)
        return tally.pointee
    }
}
