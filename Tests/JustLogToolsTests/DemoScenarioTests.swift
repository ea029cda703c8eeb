import Foundation
import JustLogCore
import JustLogTestSupport
import JustLogTools
import Testing

@Suite struct DemoScenarioTests {
    @Test func demoRunsTheWholePathOnOneMachineAndLosesNothing() async throws {
        let folder = try TemporaryDirectory(prefix: "demo")
        let output = LineCapture()
        let report = try await DemoScenario(
            options: .init(
                burst: 500,
                folder: folder.url,
                output: output.output,
                diagnostics: output.diagnostics
            )
        ).run()
        #expect(report.logged == 506)
        #expect(report.loggedPerLevel == [.verbose: 1, .debug: 501, .info: 2, .warning: 1, .error: 1])
        #expect(report.fileEvents == 506)
        #expect(report.received == 506, "every event reached the embedded collector")
        #expect(report.missingFromCollector == 0)
        #expect(report.lostNothing)
        let summary = DemoScenario.summary(report)
        #expect(summary.contains("result:    nothing lost"))
        #expect(summary.contains("at the collector     506"))
        // The console shows info and above, readable, and the socket activity.
        #expect(output.text.contains("☠️ ERROR: checkout failed"))
        #expect(!output.text.contains("burst event"), "the burst is debug: file and Logstash only")
        #expect(output.text.contains("JustLog Logstash: connected to 127.0.0.1:"))
        // The error chain reaches the file: NSError → Swift LocalizedError → URLError.
        let errorLine = try String(contentsOf: report.fileURL, encoding: .utf8).split(separator: "\n")
            .map { try FileLine(parsing: $0) }.first { $0.record.message == "checkout failed" }
        guard case .array(let chain)? = errorLine?.record.userInfo["errors"] else {
            Issue.record("no error chain")
            return
        }
        #expect(chain.count == 3)
    }

    @Test func demoAgainstADeadCollectorSaysWhatWasLostAndFails() async throws {
        let folder = try TemporaryDirectory(prefix: "demo-dead")
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let port = refusing.port
        let output = LineCapture()
        let report = try await DemoScenario(
            options: .init(
                burst: 10,
                folder: folder.url,
                collector: .init(host: "127.0.0.1", port: port, useTLS: false),
                output: output.output,
                diagnostics: output.diagnostics
            )
        ).run()
        #expect(!report.lostNothing)
        #expect(report.sendError?.contains("stay spooled") == true, "\(report.sendError ?? "nil")")
        #expect(
            DemoScenario.summary(report).contains(
                "result:    LOST: events were not handed to the collector (they stay in the spool)"
            )
        )
        #expect(report.fileEvents == report.logged, "the file still has everything")
    }

    /// Issue #10: `justlog demo --events 24000` reported "LOST: 23558 event(s) missing from the file" because the
    /// file had rotated and only the current file was counted.
    @Test func aDemoWhoseFileRotatesCountsEveryRotatedFile() async throws {
        let folder = try TemporaryDirectory(prefix: "demo-rotate")
        let output = LineCapture()
        let report = try await DemoScenario(
            options: .init(
                burst: 24_000,
                folder: folder.url,
                output: output.output,
                diagnostics: output.diagnostics
            )
        ).run()
        #expect(report.rotatedFiles >= 1, "the burst is larger than one 10 MiB file")
        #expect(report.fileEvents == report.logged)
        #expect(report.lostNothing, "\(DemoScenario.summary(report))")
        #expect(DemoScenario.summary(report).contains("rotated file"))
    }

    /// A second demo in the folder of one whose file rotated counted the earlier run's rotated file as its own and
    /// reported its events lost (review, helper-72).
    @Test func aSecondDemoInTheSameFolderCountsOnlyItsOwnEvents() async throws {
        let folder = try TemporaryDirectory(prefix: "demo-again")
        for burst in [24_000, 10] {
            let output = LineCapture()
            let report = try await DemoScenario(
                options: .init(burst: burst, folder: folder.url, output: output.output, diagnostics: output.diagnostics)
            ).run()
            #expect(report.fileEvents == report.logged, "\(DemoScenario.summary(report))")
            #expect(report.lostNothing, "\(DemoScenario.summary(report))")
        }
    }

    /// Issue #10: every demo run left its 4 MiB spool in the temporary folder.
    @Test func aDemoInTheTemporaryFolderLeavesNoSpoolBehind() async throws {
        let output = LineCapture()
        let report = try await DemoScenario(
            options: .init(burst: 10, output: output.output, diagnostics: output.diagnostics)
        ).run()
        let folder = report.fileURL.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(report.lostNothing)
        #expect(FileManager.default.fileExists(atPath: report.fileURL.path), "the log file stays, for justlog view")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("justlog-demo.log.spool").path))
    }

    @Test func unusableFolderIsOneClearError() async {
        await #expect {
            _ = try await DemoScenario(options: .init(burst: 1, folder: URL(fileURLWithPath: "/proc/justlog-demo")))
                .run()
        } throws: { error in
            (error as? ToolError)?.message.contains("pass --dir with a writable folder") == true
        }
    }
}
