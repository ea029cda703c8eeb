import Foundation
import JustLog
import JustLogCore
import JustLogLogging
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The per-call cases of ``BenchSuite``, all logging the same event: `"user signed in"` with `userID` 42,
/// `plan` "gold", `attempt` 1. The documented logger is set up with the property-style API, file and
/// Logstash on (plain TCP to the suite's loopback sink), console off.
struct CallCases {
    static let keys = [
        "clock", "literal", "filtered", "file_only", "file_unjournaled", "message_only", "hot_path", "hot_path_fields",
        "error_chain", "bridge", "streamloghandler",
    ]

    let all: [CallCase]
    private let cleanUp: () -> Void

    init(folder: URL, logger: JustLog.Logger, collectorPort: Int) throws {
        let shared = folder.appendingPathComponent("shared", isDirectory: true)
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
        logger.baseUrlForFileLogging = shared
        logger.logFilename = "bench.log"
        logger.logstashHost = "127.0.0.1"
        logger.logstashPort = UInt16(collectorPort)
        logger.logstashUseTLS = false
        logger.enableConsoleLogging = false
        logger.setup()
        let pipeline = logger.pipeline
        let drainShared: @Sendable () -> Void = { _ = logger.pipeline.flush(timeout: 60) }
        let runtime = RuntimeValues.make()

        // Filtered out: the only destination takes warnings and above; the call is at debug.
        let filteredFolder = folder.appendingPathComponent("filtered", isDirectory: true)
        try FileManager.default.createDirectory(at: filteredFolder, withIntermediateDirectories: true)
        let filtered = JustLog.Logger(
            configuration: .init(
                console: nil,
                file: .init(url: filteredFolder.appendingPathComponent("bench.log"), minimumLevel: .warning)
            )
        )

        // File only: the documented call into a logger whose one destination is a file (no Logstash).
        let fileFolder = folder.appendingPathComponent("file-only", isDirectory: true)
        try FileManager.default.createDirectory(at: fileFolder, withIntermediateDirectories: true)
        let fileOnly = JustLog.Logger(
            configuration: .init(console: nil, file: .init(url: fileFolder.appendingPathComponent("bench.log")))
        )
        // The same without the journal: what crash safety costs the caller.
        let fileUnjournaled = JustLog.Logger(
            configuration: .init(
                console: nil,
                file: .init(url: fileFolder.appendingPathComponent("bench-unjournaled.log")),
                journal: nil
            )
        )

        let underlying = NSError(
            domain: NSURLErrorDomain,
            code: NSURLErrorTimedOut,
            userInfo: [NSLocalizedDescriptionKey: "The request timed out."]
        )
        let chained = NSError(
            domain: "com.example.payments",
            code: 42,
            userInfo: [
                NSLocalizedDescriptionKey: "payment failed", NSUnderlyingErrorKey: underlying,
            ]
        )

        let bridge = Logging.Logger(label: "bench") { JustLogLogHandler(label: $0, pipeline: pipeline) }

        let streamFile = folder.appendingPathComponent("streamloghandler.log")
        let stream = try FileTextStream(url: streamFile)
        let streamLogger = Logging.Logger(label: "bench") { StreamLogHandler(label: $0, stream: stream) }

        all = [
            CallCase(key: "clock", label: "clock read alone (timing overhead, in every row)", call: { _ in }),
            CallCase(
                key: "literal",
                label: "baseline: the 3-entry [String: Any] literal alone",
                call: { _ in
                    BlackHole.keep(["userID": 42, "plan": "gold", "attempt": 1] as [String: Any])
                }
            ),
            CallCase(
                key: "filtered",
                label: "JustLog: filtered out (debug below warning), 3-field literal",
                call: { _ in
                    filtered.debug("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
                }
            ),
            CallCase(
                key: "file_only",
                label: "JustLog: Logger info + 3 fields (file only)",
                call: { _ in
                    fileOnly.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
                },
                drain: { _ = fileOnly.pipeline.flush(timeout: 60) }
            ),
            CallCase(
                key: "file_unjournaled",
                label: "JustLog: Logger info + 3 fields (file only, no journal)",
                call: { _ in
                    fileUnjournaled.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
                },
                drain: { _ = fileUnjournaled.pipeline.flush(timeout: 60) }
            ),
            CallCase(
                key: "message_only",
                label: "JustLog: Logger.shared info, no userInfo (file + Logstash)",
                call: { _ in
                    logger.info("user signed in")
                },
                drain: drainShared
            ),
            CallCase(
                key: "hot_path",
                label: "JustLog: Logger.shared info + 3 fields (file + Logstash)",
                call: { _ in
                    logger.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
                },
                drain: drainShared
            ),
            CallCase(
                key: "hot_path_fields",
                label: "JustLog: Logger.shared info + 3 typed fields (file + Logstash)",
                call: { _ in
                    // Values known only at run time, as at a real call site: a literal of constants would be
                    // built once, at compile time.
                    logger.info(
                        "user signed in",
                        fields: [
                            "userID": .int(runtime.userID), "plan": .string(runtime.plan),
                            "attempt": .int(runtime.attempt),
                        ]
                    )
                },
                drain: drainShared
            ),
            CallCase(
                key: "error_chain",
                label: "JustLog: Logger.shared error + NSError chain (file + Logstash)",
                call: { _ in
                    logger.error("payment failed", error: chained)
                },
                drain: drainShared
            ),
            CallCase(
                key: "bridge",
                label: "JustLog: swift-log bridge (JustLogLogHandler), 3 fields",
                call: { _ in
                    bridge.info(
                        "user signed in",
                        metadata: ["userID": .stringConvertible(42), "plan": "gold", "attempt": .stringConvertible(1)]
                    )
                },
                drain: drainShared
            ),
            CallCase(
                key: "streamloghandler",
                label: "baseline: swift-log StreamLogHandler → file, 3 fields",
                call: { _ in
                    streamLogger.info(
                        "user signed in",
                        metadata: ["userID": .stringConvertible(42), "plan": "gold", "attempt": .stringConvertible(1)]
                    )
                }
            ),
        ]
        cleanUp = {
            filtered.shutdown()
            fileOnly.shutdown()
            fileUnjournaled.shutdown()
            logger.shutdown()
            stream.close()
        }
    }

    func tearDown() { cleanUp() }
}

/// The bench event's values, read at run time (see `hot_path_fields`).
struct RuntimeValues: Sendable {
    let userID: Int64
    let plan: String
    let attempt: Int64

    @inline(never)
    static func make() -> RuntimeValues {
        RuntimeValues(
            userID: Int64(ProcessInfo.processInfo.environment["JUSTLOG_BENCH_USER_ID"] ?? "42") ?? 42,
            plan: ProcessInfo.processInfo.environment["JUSTLOG_BENCH_PLAN"] ?? "gold",
            attempt: 1
        )
    }
}

/// Uses a literal past the optimizer: the baseline of building a literal must build it, and destroy it where a log
/// call would. `keep` is compiled without optimization, so no caller can learn that it ignores its argument; it
/// writes nothing. Storing the dictionary in a global `Any?` (before) cost ~340 instructions (an exclusivity
/// check, an existential copy and assignment) that no log call pays, and so flattered every row measured against
/// it; adding its count to one word in memory made the threads of the concurrency baseline share that word.
enum BlackHole {
    @inline(never)
    @_optimize(none)
    static func keep(_ value: [String: Any]) {}
}

/// A `TextOutputStream` onto a file: one `write(2)` per event, as swift-log's `StreamLogHandler` does on
/// standard output (it flushes after every line).
final class FileTextStream: TextOutputStream, @unchecked Sendable {
    private let descriptor: Int32

    init(url: URL) throws {
        descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
        guard descriptor >= 0 else { throw ToolError("bench: cannot open \(url.path) (errno \(errno))") }
    }

    func write(_ string: String) {
        var string = string
        string.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = writeBytes(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    func close() { closeDescriptor(descriptor) }
}

/// `write(2)` and `close(2)` under names that methods called `write` and `close` don't shadow.
func writeBytes(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, bytes, count) }
func closeDescriptor(_ descriptor: Int32) { _ = close(descriptor) }
