import ArgumentParser
import Foundation
import JustLogCore
import JustLogTools

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the cost of a log call, side by side with baselines.",
        discussion: """
            Build in release for meaningful numbers:
              swift run -c release justlog bench
              swift run -c release justlog bench --iterations 1000000
            """
    )

    @Option(help: "Calls per run (each case runs five times; the median is shown).")
    var iterations = 200_000

    func run() async throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("justlog-bench-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        #if DEBUG
        TextOutput.standardError.write(
            Array("justlog: this is a debug build; run `swift run -c release justlog bench` for real numbers\n".utf8)
        )
        #endif
        let results = try await BenchSuite(iterations: iterations, folder: folder).run()
        TextOutput.standardOutput.write(Array(BenchSuite.table(results).utf8))
    }
}
