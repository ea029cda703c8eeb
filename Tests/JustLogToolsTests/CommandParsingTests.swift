import ArgumentParser
import Testing

@testable import JustLogCLI

/// The command-line structs parse what their `--help` examples show, and refuse the rest.
@Suite struct CommandParsingTests {
    /// Issue #10: there was no `--version`.
    @Test func versionPrintsTheToolsVersion() {
        #expect {
            _ = try JustLogCommand.parseAsRoot(["--version"])
        } throws: { error in
            JustLogCommand.exitCode(for: error) == .success
                && JustLogCommand.message(for: error) == "justlog \(JustLogVersion.current)"
        }
    }

    /// `justlog bench --iterations 9223372036854775807` trapped (review, helper-48); counts out of range are one
    /// line that says the range.
    @Test(arguments: [
        (["--iterations", "9223372036854775807"], "--iterations must be 1 to 50000000"),
        (["--iterations", "0"], "--iterations must be 1 to 50000000"),
        (["--events=-1"], "--events must be 1 to 1000000000"),
        (["--allocation-calls", "5000"], "--allocation-calls must be 1 to 4096"),
        (["--only", "hot_path", "--calls", "9223372036854775807"], "--calls must be 1 to 1000000000"),
    ])
    func benchRefusesCountsItCantHold(_ arguments: [String], _ message: String) throws {
        #expect {
            _ = try BenchCommand.parse(arguments)
        } throws: { error in
            BenchCommand.message(for: error).contains(message)
        }
        _ = try BenchCommand.parse(["--iterations", "50000000", "--events", "1000", "--allocation-calls", "4096"])
    }

    @Test func receiveParsesItsOptions() throws {
        let command = try ReceiveCommand.parse([
            "--port", "5052", "--tls-cert", "s.pem", "--tls-key", "s.key", "--host", "0.0.0.0",
        ])
        #expect(command.port == 5052)
        #expect(command.host == "0.0.0.0")
        #expect(command.tlsCertificate == "s.pem")
        #expect(command.tlsKey == "s.key")
        #expect(try ReceiveCommand.parse([]).port == 5000)
        #expect(try ReceiveCommand.parse(["--out", "r.jsonl"]).out == "r.jsonl")
        #expect(try ReceiveCommand.parse(["--pretty"]).pretty)
    }

    @Test func receiveSpeaksJSONLinesByDefaultOrBeatsAndRefusesOtherProtocols() throws {
        #expect(try ReceiveCommand.parse([]).wireProtocol == "json_lines")
        #expect(try ReceiveCommand.parse(["--protocol", "beats", "--port", "5044"]).wireProtocol == "beats")
        #expect(try ReceiveCommand.parse(["--protocol", "json-lines"]).wireProtocol == "json-lines")
        #expect {
            _ = try ReceiveCommand.parse(["--protocol", "http"])
        } throws: { error in
            ReceiveCommand.message(for: error).contains("give json_lines or beats")
        }
    }

    @Test func viewParsesFilesAndFilters() throws {
        let command = try ViewCommand.parse([
            "app.log.1", "app.log", "--level", "warning", "--grep", "pay", "--since", "10m", "-f", "--json",
        ])
        #expect(command.files == ["app.log.1", "app.log"])
        #expect(command.level == "warning")
        #expect(command.grep == "pay")
        #expect(command.since == "10m")
        #expect(command.follow)
        #expect(command.json)
    }

    @Test func shipParsesTheCollectorAndTransport() throws {
        let command = try ShipCommand.parse([
            "a.log", "b.log", "--host", "logs", "--port", "5052", "--ca-file", "ca.pem", "--spool", "/tmp/s",
        ])
        #expect(command.files == ["a.log", "b.log"])
        #expect(command.host == "logs")
        #expect(command.port == 5052)
        #expect(command.caFile == "ca.pem")
        #expect(command.spool == "/tmp/s")
        #expect(!command.plain && !command.allowUntrusted)
        #expect(try ShipCommand.parse(["a.log", "--host", "h", "--port", "1", "--plain"]).plain)
    }

    @Test(arguments: [["--bogus"], ["--port", "abc"]])
    func unknownOrBadArgumentsAreRefused(arguments: [String]) {
        #expect(throws: (any Error).self) { try ReceiveCommand.parse(arguments) }
        #expect(throws: (any Error).self) { try ShipCommand.parse(["a.log"] + arguments) }
    }

    @Test func everyCommandHasAnExampleInItsHelp() {
        for command in [ReceiveCommand.self, ViewCommand.self, ShipCommand.self] as [any ParsableCommand.Type] {
            #expect(command.configuration.discussion.contains("Example"))
            #expect(command.helpMessage().contains("justlog \(command.configuration.commandName!)"))
        }
    }
}
