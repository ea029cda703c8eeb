public import Foundation
import JustLogCore
import JustLogLogstash
import JustLogReceivers
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `justlog bench`: the cost of a log call on the caller's thread, side by side with baselines measured in
/// the same run. Build in release (`swift run -c release justlog bench`): debug numbers mean little.
///
/// Each case runs `iterations` calls after a warm-up, five times; the median run is reported as ns per call
/// and as a ratio to the naive baseline (format a line and `write(2)` it per call, as many file loggers do).
/// Calls are timed in bursts of 4096, each followed by an untimed drain, so "ns/call" is what the caller
/// pays; "end-to-end" includes the drains — the time until the background work has written every event
/// (to the file, or to the collector's socket), i.e. the sustained throughput of the whole path.
///
/// The Logstash case sends to a `json_lines` receiver on loopback; its caller cost minus the file case's
/// is the cost of the crash-safe spool append on the caller's thread.
public struct BenchSuite: Sendable {
    public struct Result: Sendable {
        public var name: String
        public var nanosecondsPerCall: Double
        public var endToEndNanoseconds: Double
    }

    /// One case: what a call does, how to wait for the background work, how to clean up.
    private struct Case {
        var call: (Int) -> Void
        var drain: () -> Void = {}
        var tearDown: () -> Void = {}
    }

    public var iterations: Int
    public var folder: URL
    /// Calls per timed burst: a quarter of the default queue capacity.
    static let burst = 4096

    public init(iterations: Int = 200_000, folder: URL) {
        self.iterations = max(1000, iterations)
        self.folder = folder
    }

    public func run() async throws -> [Result] {
        let tally = EventIDTally()
        let receiver = JSONLinesReceiver(configuration: .init(), handler: tally.record)
        let port = try await receiver.start()
        defer { Task { await receiver.stop() } }

        var results: [Result] = []
        results.append(try measure("baseline: swift-log call, filtered out") { _ in
            let log = Logging.Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
            return Case(call: { index in log.info("request \(index) served") })
        })
        results.append(try measure("baseline: format + write(2) per call") { url in
            let fd = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0o600)
            return Case(call: { index in
                let line = "\(Date()) INFO request \(index) served\n"
                _ = line.utf8.withContiguousStorageIfAvailable { write(fd, $0.baseAddress, $0.count) }
            }, tearDown: { close(fd) })
        })
        results.append(try measure("JustLog: filtered out (below minimum level)") { url in
            try fileCase(url, level: .warning) { logger, index in logger.debug("request \(index) served") }
        })
        results.append(try measure("JustLog: info, message only → file") { url in
            try fileCase(url, level: .verbose) { logger, index in logger.info("request \(index) served") }
        })
        results.append(try measure("JustLog: info + 3-key userInfo → file") { url in
            try fileCase(url, level: .verbose) { logger, index in
                logger.info("request \(index) served", userInfo: ["status": 200, "path": "/menu", "ms": 1.5])
            }
        })
        results.append(try measure("JustLog: info, message only → Logstash (spool)") { url in
            var client = LogstashClient.Configuration(host: "127.0.0.1", port: port)
            client.useTLS = false
            client.sendInterval = .milliseconds(100)
            let spool = url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + ".spool")
            try? FileManager.default.removeItem(at: spool)
            let destination = try LogstashDestination(configuration: .init(client: client, spoolDirectory: spool.path))
            let logger = StructuredLogger(configuration: .init(destinations: [.init(destination)]))
            return Case(
                call: { index in logger.info("request \(index) served") },
                drain: { _ = logger.pipeline.flush(timeout: 60) },
                tearDown: {
                    logger.pipeline.shutdown()
                    try? FileManager.default.removeItem(at: spool)
                }
            )
        })
        results.append(try measureSpoolAppend())
        return results
    }

    /// The spool's part of the Logstash case: appending an already-encoded 400-byte record (a `memcpy`
    /// into the mapped segment, with its length and CRC), five runs, the median.
    private func measureSpoolAppend() throws -> Result {
        var runs: [Double] = []
        for run in 0..<5 {
            let directory = folder.appendingPathComponent("spool-append-\(run)")
            try? FileManager.default.removeItem(at: directory)
            let measurement = try LogstashSpool.measureAppend(records: iterations, payloadBytes: 400, directory: directory.path)
            runs.append(measurement.nanosecondsPerAppend)
            try? FileManager.default.removeItem(at: directory)
        }
        let median = runs.sorted()[runs.count / 2]
        return Result(name: "spool alone: append a 400-byte encoded record", nanosecondsPerCall: median, endToEndNanoseconds: median)
    }

    private func fileCase(_ url: URL, level: LogLevel, _ call: @escaping (StructuredLogger, Int) -> Void) throws -> Case {
        let file = try FileDestination(configuration: .init(url: url, maximumFileSize: 1 << 30))
        let logger = StructuredLogger(configuration: .init(destinations: [.init(file, minimumLevel: level)]))
        return Case(call: { call(logger, $0) }, drain: { _ = logger.pipeline.flush(timeout: 60) }, tearDown: { logger.pipeline.shutdown() })
    }

    /// Runs a case five times and keeps the median of each figure.
    private func measure(_ name: String, _ setUp: (URL) throws -> Case) throws -> Result {
        var callRuns: [Double] = []
        var endToEndRuns: [Double] = []
        for run in 0..<5 {
            let url = folder.appendingPathComponent("bench-\(run).log")
            try? FileManager.default.removeItem(at: url)
            let bench = try setUp(url)
            for index in 0..<1000 { bench.call(index) }
            bench.drain()
            // Calls are timed in bursts that fit the queue, so the caller's cost is measured, not the
            // back-pressure of a sustained overload; the untimed drains are included in end-to-end.
            var callNanoseconds: UInt64 = 0
            let start = DispatchTime.now().uptimeNanoseconds
            var done = 0
            while done < iterations {
                let burst = min(Self.burst, iterations - done)
                let burstStart = DispatchTime.now().uptimeNanoseconds
                for index in done..<(done + burst) { bench.call(index) }
                callNanoseconds += DispatchTime.now().uptimeNanoseconds - burstStart
                bench.drain()
                done += burst
            }
            let drained = DispatchTime.now().uptimeNanoseconds
            callRuns.append(Double(callNanoseconds) / Double(iterations))
            endToEndRuns.append(Double(drained - start) / Double(iterations))
            bench.tearDown()
            try? FileManager.default.removeItem(at: url)
        }
        let median = { (values: [Double]) in values.sorted()[values.count / 2] }
        return Result(name: name, nanosecondsPerCall: median(callRuns), endToEndNanoseconds: median(endToEndRuns))
    }

    /// The side-by-side table.
    public static func table(_ results: [Result]) -> String {
        let baseline = results.first { $0.name.hasPrefix("baseline: format") }?.nanosecondsPerCall ?? 1
        var table = Table(headers: ["case", "ns/call (caller)", "× naive write", "ns/event (end-to-end)", "events/s (end-to-end)"])
        for result in results {
            table.add([
                result.name,
                String(format: "%.0f", result.nanosecondsPerCall),
                String(format: "%.2f", result.nanosecondsPerCall / baseline),
                String(format: "%.0f", result.endToEndNanoseconds),
                result.endToEndNanoseconds > 0 ? String(Int(1e9 / result.endToEndNanoseconds)) : "",
            ])
        }
        return table.text
    }
}
