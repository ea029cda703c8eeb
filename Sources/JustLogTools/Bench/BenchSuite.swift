public import Foundation
import JustLogCore
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
/// pays; "end-to-end" includes the drains — the time until the background thread has written every event,
/// i.e. the sustained throughput of the whole path on this machine.
public struct BenchSuite: Sendable {
    public struct Result: Sendable {
        public var name: String
        public var nanosecondsPerCall: Double
        public var endToEndNanoseconds: Double?
    }

    public var iterations: Int
    public var folder: URL
    /// Calls per timed burst: a quarter of the default queue capacity.
    static let burst = 4096

    public init(iterations: Int = 200_000, folder: URL) {
        self.iterations = max(1000, iterations)
        self.folder = folder
    }

    public func run() throws -> [Result] {
        var results: [Result] = []
        results.append(measure("baseline: swift-log, no-op handler") { make in
            let log = Logging.Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
            return ({ index in log.info("request \(index) served") }, {})
        })
        results.append(try measureNaiveWrite())
        results.append(measure("JustLog: filtered out (below minimum level)") { make in
            let logger = make(.warning)
            return ({ index in logger.debug("request \(index) served") }, { _ = logger.pipeline.flush(timeout: 60) })
        })
        results.append(measure("JustLog: info, message only → file") { make in
            let logger = make(.verbose)
            return ({ index in logger.info("request \(index) served") }, { _ = logger.pipeline.flush(timeout: 60) })
        })
        results.append(measure("JustLog: info + 3-key userInfo → file") { make in
            let logger = make(.verbose)
            return ({ index in logger.info("request \(index) served", userInfo: ["status": 200, "path": "/menu", "ms": 1.5]) },
                    { _ = logger.pipeline.flush(timeout: 60) })
        })
        return results
    }

    /// Runs a case five times and keeps the median.
    private func measure(
        _ name: String,
        _ setUp: (_ makeLogger: (LogLevel) -> StructuredLogger) -> (call: (Int) -> Void, drain: () -> Void)
    ) -> Result {
        var callRuns: [Double] = []
        var endToEndRuns: [Double] = []
        for run in 0..<5 {
            let url = folder.appendingPathComponent("bench-\(run).log")
            try? FileManager.default.removeItem(at: url)
            var pipelines: [LogPipeline] = []
            let (call, drain) = setUp { level in
                let file = try! FileDestination(configuration: .init(url: url, maximumFileSize: 1 << 30))
                let logger = StructuredLogger(configuration: .init(destinations: [.init(file, minimumLevel: level)]))
                pipelines.append(logger.pipeline)
                return logger
            }
            for index in 0..<1000 { call(index) }
            drain()
            // Calls are timed in bursts that fit the queue, so the caller's cost is measured, not the
            // back-pressure of a sustained overload; the untimed drains are included in end-to-end.
            var callNanoseconds: UInt64 = 0
            let start = DispatchTime.now().uptimeNanoseconds
            var done = 0
            while done < iterations {
                let burst = min(Self.burst, iterations - done)
                let burstStart = DispatchTime.now().uptimeNanoseconds
                for index in done..<(done + burst) { call(index) }
                callNanoseconds += DispatchTime.now().uptimeNanoseconds - burstStart
                drain()
                done += burst
            }
            let drained = DispatchTime.now().uptimeNanoseconds
            callRuns.append(Double(callNanoseconds) / Double(iterations))
            endToEndRuns.append(Double(drained - start) / Double(iterations))
            pipelines.forEach { $0.shutdown() }
            try? FileManager.default.removeItem(at: url)
        }
        let median = { (values: [Double]) in values.sorted()[values.count / 2] }
        return Result(name: name, nanosecondsPerCall: median(callRuns), endToEndNanoseconds: median(endToEndRuns))
    }

    private func measureNaiveWrite() throws -> Result {
        let url = folder.appendingPathComponent("bench-naive.log")
        defer { try? FileManager.default.removeItem(at: url) }
        return measure("baseline: format + write(2) per call") { _ in
            let fd = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0o600)
            return ({ index in
                let line = "\(Date()) INFO request \(index) served\n"
                _ = line.utf8.withContiguousStorageIfAvailable { write(fd, $0.baseAddress, $0.count) }
            }, {})
        }
    }

    /// The side-by-side table.
    public static func table(_ results: [Result]) -> String {
        let baseline = results.first { $0.name.hasPrefix("baseline: format") }?.nanosecondsPerCall ?? 1
        var table = Table(headers: ["case", "ns/call (caller)", "× naive write", "ns/event (end-to-end)"])
        for result in results {
            table.add([
                result.name,
                String(format: "%.0f", result.nanosecondsPerCall),
                String(format: "%.2f", result.nanosecondsPerCall / baseline),
                result.endToEndNanoseconds.map { String(format: "%.0f", $0) } ?? "",
            ])
        }
        return table.text
    }
}
