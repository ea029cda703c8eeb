import ArgumentParser
import Foundation
import JustLogCore
import JustLogTools

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the cost of a log call and the throughput to a file and a collector, beside baselines.",
        discussion: """
            Build in release for meaningful numbers (BENCHMARKS.md explains every figure):
              swift run -c release justlog bench            # the full run, under a minute
              swift run -c release justlog bench --quick    # a few seconds
              swift run -c release justlog bench --quick --json
            Allocations are counted on the caller's thread by ordo-one's malloc interposer, linked into this
            tool only; instructions per call come from Benchmarks/callgrind.sh.
            """
    )

    @Flag(help: "Fewer calls and events: finishes within a minute on a 2-core machine.")
    var quick = false

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    @Option(help: "Calls timed per per-call case (default 200000, or 20000 with --quick).")
    var iterations: Int?

    @Option(help: "Events per throughput case (default 500000, or 50000 with --quick).")
    var events: Int?

    @Option(help: "Calls whose allocations are counted per case (at most 4096).")
    var allocationCalls: Int?

    @Option(
        help: ArgumentHelp(
            "Only make <calls> calls of this case, unmeasured (for Benchmarks/callgrind.sh); or run only throughput_file, throughput_file_fields, throughput_logstash, throughput_logstash_fields or concurrency (for a profiler, or many runs of one figure).",
            visibility: .hidden
        )
    )
    var only: String?

    @Option(help: ArgumentHelp("Calls made by --only.", visibility: .hidden))
    var calls = 1000

    @Option(
        name: .customLong("case"),
        help: ArgumentHelp(
            "With --only concurrency: the per-call case measured from several threads (default hot_path, the documented call).",
            visibility: .hidden
        )
    )
    var concurrencyCase = "hot_path"

    /// Counts a run can hold: each timed call keeps its time (8 bytes) until the run ends, and `Int.max` of
    /// anything trapped or never finished (review, helper-48).
    func validate() throws {
        let limits: [(name: String, value: Int?, range: ClosedRange<Int>)] = [
            ("--iterations", iterations, 1...50_000_000),
            ("--events", events, 1...1_000_000_000),
            ("--allocation-calls", allocationCalls, 1...4096),
            ("--calls", calls, 1...1_000_000_000),
        ]
        for limit in limits {
            if let value = limit.value, !limit.range.contains(value) {
                throw ValidationError(
                    "\(limit.name) must be \(limit.range.lowerBound) to \(limit.range.upperBound), not \(value)"
                )
            }
        }
    }

    func run() throws {
        do {
            try measure()
        } catch let error as ToolError {
            throw exitReporting(error)
        }
    }

    private func measure() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("justlog-bench-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var options = quick ? BenchSuite.Options.quick : .full
        options = BenchSuite.Options(
            callSamples: iterations ?? options.callSamples,
            throughputEvents: events ?? options.throughputEvents,
            allocationCalls: allocationCalls ?? options.allocationCalls
        )
        let suite = BenchSuite(options: options, folder: folder, allocationCounter: InterposerAllocationCounter())
        if let only, BenchSuite.throughputKeys.contains(only) {
            let rate = try suite.runThroughput(only)
            TextOutput.standardOutput.write(Array("\(only): \(Int(rate)) events/s\n".utf8))
            return
        }
        if only == BenchSuite.concurrencyKey {
            let measured = try suite.runConcurrency(of: concurrencyCase)
            TextOutput.standardOutput.write(Array(measured.summary.utf8))
            return
        }
        if let only {
            try suite.runCalls(only, count: calls)
            return
        }
        #if DEBUG
        TextOutput.standardError.write(
            Array("justlog: this is a debug build; run `swift run -c release justlog bench` for real numbers\n".utf8)
        )
        #endif
        let report = try suite.run()
        TextOutput.standardOutput.write(Array((json ? report.json : report.table).utf8))
    }
}
