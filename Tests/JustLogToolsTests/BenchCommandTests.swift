import Foundation
import JustLog
import JustLogCore
import JustLogTestSupport
import JustLogTools
import Testing

/// `justlog bench`: the JSON object other programs read, from tiny runs (figures from a debug build mean
/// nothing; only the shape and the counting are checked, never a time).
@Suite(.serialized)
struct BenchCommandTests {
    static let keysReadElsewhere = [
        "hot_path_ns_p50", "hot_path_allocs", "filtered_allocs", "file_events_per_s", "file_limit_events_per_s",
        "tcp_events_per_s", "streamloghandler_ns_p50", "machine",
    ]

    @Test func theJSONReportHasTheKeysOtherProgramsRead() async throws {
        let folder = try TemporaryDirectory(prefix: "bench-json")
        let suite = BenchSuite(
            options: .init(callSamples: 50, throughputEvents: 300, allocationCalls: 10),
            folder: URL(fileURLWithPath: folder.path),
            allocationCounter: UnavailableAllocationCounter(reason: "not counted in this test"),
            logger: JustLog.Logger()
        )
        let report = try await offThePool { Result { try suite.run() } }.get()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        for key in Self.keysReadElsewhere {
            #expect(object[key] != nil, "missing \(key)")
        }
        for key in BenchSuite.callKeys {
            #expect(object["\(key)_ns_p50"] is NSNumber, "missing \(key)_ns_p50")
            #expect(object["\(key)_allocs"] is NSNull, "a count that was not made is null, not a number")
        }
        for key in [
            "file_events_per_s", "file_limit_events_per_s", "logstash_events_per_s", "tcp_events_per_s",
            "spool_bytes_per_event",
            "hot_path_calls_per_s_1_thread", "hot_path_calls_per_s_threads", "literal_calls_per_s_1_thread",
            "literal_calls_per_s_threads", "hot_path_threads_ratio_median_round", "literal_threads_ratio_median_round",
        ] {
            #expect(((object[key] as? NSNumber)?.doubleValue ?? 0) > 0, "\(key) is \(String(describing: object[key]))")
        }
        let machine = try #require(object["machine"] as? [String: Any])
        #expect((machine["cores"] as? Int ?? 0) >= 1)
        #expect(report.table.contains("StreamLogHandler"))
    }

    /// The tool counts with the malloc interposer it links: real counts, and only the caller's thread's —
    /// reading the clock allocates nothing, even while the pipeline's threads work.
    @Test func theToolCountsAllocationsOnTheCallersThreadOnly() async throws {
        let output = try await runJustlog([
            "bench", "--json", "--iterations", "50", "--events", "300", "--allocation-calls", "20",
        ])
        #expect(output.status == 0, "\(output.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(output.standardOutput.utf8)) as? [String: Any]
        )
        for key in Self.keysReadElsewhere {
            #expect(object[key] != nil, "missing \(key)")
        }
        if Self.sanitizerOwnsMalloc {
            // ThreadSanitizer's (or AddressSanitizer's) malloc comes before the interposer's: nothing can be
            // counted, and the report must say so rather than print a number.
            #expect((object["allocation_counter"] as? String)?.hasPrefix("unavailable") == true)
            for key in BenchSuite.callKeys {
                #expect(object["\(key)_allocs"] is NSNull)
            }
            return
        }
        #expect((object["clock_allocs"] as? NSNumber)?.doubleValue == 0)
        #expect(
            ((object["literal_allocs"] as? NSNumber)?.doubleValue ?? 0) >= 1,
            "a [String: Any] literal allocates its storage"
        )
        #expect(((object["hot_path_allocs"] as? NSNumber)?.doubleValue ?? 0) >= 1)
        #expect(object["filtered_allocs"] is NSNumber)
        #expect((object["allocation_counter"] as? String)?.hasPrefix("malloc-interposer") == true)
    }

    @Test func onlyMakesTheCallsOfOneCaseAndRefusesAnUnknownOne() async throws {
        let done = try await runJustlog(["bench", "--only", "hot_path", "--calls", "20"])
        #expect(done.status == 0, "\(done.standardError)")
        #expect(done.standardOutput.isEmpty)
        let unknown = try await runJustlog(["bench", "--only", "no_such_case"])
        #expect(unknown.status == 64)
        #expect(unknown.standardError.contains("hot_path"), "the error lists the cases: \(unknown.standardError)")
        #expect(unknown.standardError.contains("concurrency"), "\(unknown.standardError)")
        #expect(unknown.standardError.contains("throughput_logstash"), "\(unknown.standardError)")
    }

    @Test(arguments: BenchSuite.throughputKeys)
    func onlyRunsOneEndToEndCaseAndPrintsItsRate(key: String) async throws {
        let output = try await runJustlog(["bench", "--only", key, "--events", "300"])
        #expect(output.status == 0, "\(output.standardError)")
        let rate = output.standardOutput.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
        #expect(output.standardOutput.hasPrefix("\(key): ") && rate > 0, "\(output.standardOutput)")
    }

    @Test func onlyConcurrencyMeasuresTheDocumentedCallAndTheLiteralFromOneAndFromSeveralThreads() async throws {
        let output = try await runJustlog(["bench", "--only", "concurrency", "--iterations", "2048"])
        #expect(output.status == 0, "\(output.standardError)")
        let line = output.standardOutput
        #expect(
            line.hasPrefix("concurrency, ") && line.contains("documented call ") && line.contains("literal alone "),
            "\(line)"
        )
        #expect(line.components(separatedBy: "median round ").count == 3, "both sides' median round: \(line)")
        // The thread count (at least 2), then four rates above zero: the two cases from one thread and from several.
        let numbers = line.split(whereSeparator: { $0 == "(" || $0 == " " }).compactMap { Int($0) }
        #expect(numbers.count == 5 && numbers[0] >= 2 && numbers.dropFirst().allSatisfy { $0 > 0 }, "\(line)")
    }

    @Test func onlyConcurrencyMeasuresAnotherCaseWhenAskedAndNamesIt() async throws {
        let output = try await runJustlog([
            "bench", "--only", "concurrency", "--case", "message_only", "--iterations", "2048",
        ])
        #expect(output.status == 0, "\(output.standardError)")
        let line = output.standardOutput
        #expect(
            line.contains("message_only ") && !line.contains("documented call") && line.contains("literal alone "),
            "\(line)"
        )
        let unknown = try await runJustlog(["bench", "--only", "concurrency", "--case", "nothing"])
        #expect(unknown.status == 64)
        #expect(unknown.standardError.contains("message_only"), "the error lists the cases: \(unknown.standardError)")
    }

    /// Whether this build runs under a sanitizer that replaces malloc (as `.ci/run`'s ThreadSanitizer run does).
    static var sanitizerOwnsMalloc: Bool {
        dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil
    }

    private struct Output {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    /// Runs the built `justlog` with `arguments`, killed (by its PID) if it runs past 180 s.
    private func runJustlog(_ arguments: [String]) async throws -> Output {
        let folder = try TemporaryDirectory(prefix: "bench-child")
        let process = Process()
        process.executableURL = try justlogProgram()
        process.arguments = arguments
        let stdout = folder.file("stdout")
        let stderr = folder.file("stderr")
        _ = FileManager.default.createFile(atPath: stdout, contents: nil)
        _ = FileManager.default.createFile(atPath: stderr, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: stdout)
        process.standardError = FileHandle(forWritingAtPath: stderr)
        try process.run()
        let finished = await eventually(timeout: .seconds(180)) { !process.isRunning }
        if !finished { kill(process.processIdentifier, SIGKILL) }
        await offThePool { process.waitUntilExit() }
        #expect(finished, "justlog \(arguments.joined(separator: " ")) did not finish within 180 s")
        return Output(
            status: process.terminationStatus,
            standardOutput: (try? String(contentsOfFile: stdout, encoding: .utf8)) ?? "",
            standardError: (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? ""
        )
    }
}
