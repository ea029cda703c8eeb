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

/// Allocations on the caller's thread exact, instructions within 5 %, on the p90 that the thresholds files
/// record (`cd Benchmarks && swift package benchmark thresholds check`; `Benchmarks/update-thresholds.sh`
/// records them). `mallocCountTotal` is shown but not checked: it counts every thread of the process, the
/// benchmark tool's own allocations and the pipeline's and NIO's threads included.
var exactCallerAllocations: [BenchmarkMetric: BenchmarkThresholds] {
    [
        .instructions: .init(relative: [.p90: 5.0]),
        callerMallocs: .init(absolute: [.p90: 0]),
    ]
}

var perCallMetrics: [BenchmarkMetric] { [.wallClock, .instructions, .mallocCountTotal, callerMallocs] }

// The names are the keys of `justlog bench --json`, without spaces: ordo-one's thresholds check looks for
// `Thresholds/<target>.<name>.p90.json` by the raw name, while `thresholds update` writes spaces as `_`.
//
//   literal            baseline: the 3-entry [String: Any] literal alone
//   filtered           Logger(file at .warning).debug("user signed in", userInfo: <3 fields>): filtered out
//   file_only          Logger(file only).info("user signed in", userInfo: <3 fields>)
//   message_only       Logger.shared.info("user signed in"), file + Logstash
//   hot_path           Logger.shared.info("user signed in", userInfo: <3 fields>), file + Logstash
//   hot_path_fields    Logger.shared.info("user signed in", fields: <the same 3, typed, values read at run time>)
//   error_chain        Logger.shared.error("payment failed", error: <NSError with an underlying NSError>)
//   bridge             swift-log Logger with JustLogLogHandler on Logger.shared's pipeline, 3 metadata fields
//   streamloghandler   baseline: swift-log StreamLogHandler writing to a file, 3 metadata fields
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: perCallMetrics,
        timeUnits: .nanoseconds,
        warmupIterations: 1000,
        maxDuration: .seconds(3),
        maxIterations: 50_000
    )

    perCall("literal") { _ in
        BlackHole.keep(["userID": 42, "plan": "gold", "attempt": 1] as [String: Any])
    }
    perCall("filtered") { fixture in
        fixture.filtered.debug("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
    }
    perCall("file_only", drains: true) { fixture in
        fixture.fileOnly.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
    }
    perCall("message_only", drains: true) { _ in
        JustLog.Logger.shared.info("user signed in")
    }
    perCall("hot_path", drains: true) { _ in
        JustLog.Logger.shared.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
    }
    perCall("hot_path_fields", drains: true) { fixture in
        JustLog.Logger.shared.info("user signed in", fields: ["userID": .int(fixture.userID), "plan": .string(fixture.plan), "attempt": 1])
    }
    perCall("error_chain", drains: true) { fixture in
        JustLog.Logger.shared.error("payment failed", error: fixture.chainedError)
    }
    perCall("bridge", drains: true) { fixture in
        fixture.bridge.info("user signed in", metadata: ["userID": .stringConvertible(42), "plan": "gold", "attempt": .stringConvertible(1)])
    }
    perCall("streamloghandler") { fixture in
        fixture.streamLogger.info("user signed in", metadata: ["userID": .stringConvertible(42), "plan": "gold", "attempt": .stringConvertible(1)])
    }

    // Concurrency: one sample is 512 documented calls on each of 1 or `cores` threads at once (they fit the
    // queue), from the start until every thread is done; the drain after it is not measured.
    for threads in [1, max(2, ProcessInfo.processInfo.activeProcessorCount)] {
        Benchmark("hot_path_512_calls_on_\(threads)_threads", configuration: .init(
            metrics: [.wallClock, .throughput], warmupIterations: 2, maxDuration: .seconds(3), maxIterations: 1000
        )) { benchmark in
            let fixture = Fixture.shared
            benchmark.startMeasurement()
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                for _ in 0..<512 {
                    JustLog.Logger.shared.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
                }
            }
            benchmark.stopMeasurement()
            fixture.drain()
        }
    }

    // End to end: each sample is 10 000 events, from the first call until the file is flushed or the sink
    // has read every line. `throughput` is then batches per second: × 10 000 for events per second.
    endToEnd("file_10k_events") { fixture in try fixture.fileBatch() }
    endToEnd("file_limit_10k_lines") { fixture in try fixture.fileLimitBatch() }
    endToEnd("logstash_10k_events") { fixture in try fixture.logstashBatch() }
    endToEnd("tcp_limit_10k_lines") { fixture in try fixture.tcpLimitBatch() }
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
        if drains, fixture.calls % 1024 == 0 {
            fixture.drain()
            _ = fixture.fileOnly.pipeline.flush(timeout: 60)
        }
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

/// Uses a literal past the optimizer: the literal baseline must build its literal and destroy it where a log call
/// would (see `BlackHole` in JustLogTools' CallCases.swift: storing it in an `Any?` flattered the rows).
enum BlackHole {
    @inline(never)
    @_optimize(none)
    static func keep(_ value: [String: Any]) {}
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
