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

/// What the benchmarks log to, set up once per process: `Logger.shared` with the property-style API (file and
/// Logstash on, plain TCP to a loopback sink, console off), a logger whose only destination filters the call
/// out, the swift-log bridge on the shared pipeline, and `StreamLogHandler` writing to a file.
final class Fixture: @unchecked Sendable {
    static let shared = Fixture()

    let folder: URL
    let sink: Sink
    let filtered: JustLog.Logger
    let fileOnly: JustLog.Logger
    let bridge: Logging.Logger
    let streamLogger: Logging.Logger
    let chainedError: NSError
    /// The event's values for `hot_path_fields`, read at run time as at a real call site.
    let userID = Int64(ProcessInfo.processInfo.environment["JUSTLOG_BENCH_USER_ID"] ?? "42") ?? 42
    let plan = ProcessInfo.processInfo.environment["JUSTLOG_BENCH_PLAN"] ?? "gold"
    var calls = 0
    private lazy var fileLine: [UInt8] = []
    private lazy var wireLine: [UInt8] = []
    static let batch = 10_000

    private init() {
        folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("justlog-benchmarks-\(getpid())")
        try? FileManager.default.createDirectory(at: folder.appendingPathComponent("shared"), withIntermediateDirectories: true)
        sink = Sink()
        let logger = JustLog.Logger.shared
        logger.baseUrlForFileLogging = folder.appendingPathComponent("shared")
        logger.logFilename = "bench.log"
        logger.logstashHost = "127.0.0.1"
        logger.logstashPort = UInt16(sink.port)
        logger.logstashUseTLS = false
        logger.enableConsoleLogging = false
        logger.setup()
        filtered = JustLog.Logger(configuration: .init(
            console: nil, file: .init(url: folder.appendingPathComponent("filtered.log"), minimumLevel: .warning)
        ))
        fileOnly = JustLog.Logger(configuration: .init(console: nil, file: .init(url: folder.appendingPathComponent("file-only.log"))))
        let pipeline = logger.pipeline
        bridge = Logging.Logger(label: "bench") { JustLogLogHandler(label: $0, pipeline: pipeline) }
        let stream = FileStream(path: folder.appendingPathComponent("streamloghandler.log").path)
        streamLogger = Logging.Logger(label: "bench") { StreamLogHandler(label: $0, stream: stream) }
        let underlying = NSError(domain: NSURLErrorDomain, code: NSURLErrorTimedOut, userInfo: [NSLocalizedDescriptionKey: "The request timed out."])
        chainedError = NSError(domain: "com.example.payments", code: 42, userInfo: [
            NSLocalizedDescriptionKey: "payment failed", NSUnderlyingErrorKey: underlying,
        ])
    }

    func drain() { _ = JustLog.Logger.shared.pipeline.flush(timeout: 60) }

    // MARK: - End to end

    /// 10 000 documented calls into a file logger (default rotation), until flushed.
    func fileBatch() throws {
        let url = folder.appendingPathComponent("file/bench.log")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let logger = JustLog.Logger(configuration: .init(console: nil, file: .init(url: url)))
        for _ in 0..<Self.batch { logger.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1]) }
        logger.shutdown(timeout: 60)
        if fileLine.isEmpty, let data = FileManager.default.contents(atPath: url.path), let end = data.firstIndex(of: 10) {
            fileLine = Array(data[..<end]) + [10]
        }
    }

    /// The same 10 000 lines, preformatted, in 64 KiB `write(2)` calls.
    func fileLimitBatch() throws {
        if fileLine.isEmpty { try fileBatch() }
        let descriptor = open(folder.appendingPathComponent("raw.log").path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
        defer { close(descriptor) }
        try writeLines(fileLine, count: Self.batch, to: descriptor)
    }

    /// 10 000 documented calls into a Logstash-only logger, until the sink has read them all.
    func logstashBatch() throws {
        let spool = folder.appendingPathComponent("logstash-spool", isDirectory: true)
        let logger = JustLog.Logger(configuration: .init(
            console: nil,
            logstash: .init(host: "127.0.0.1", port: UInt16(sink.port), sendInterval: 0.05, useTLS: false, spoolFolder: spool)
        ))
        defer { logger.shutdown(timeout: 60) }
        let start = sink.lines
        for _ in 0..<Self.batch { logger.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1]) }
        logger.forceSend()
        guard sink.wait(forLines: start + Self.batch, timeout: 120) else { throw BenchmarkFailure("the sink did not get 10 000 lines in 120 s") }
        if wireLine.isEmpty { wireLine = sink.firstLine + [10] }
    }

    /// The same 10 000 lines as sent, preformatted, in 64 KiB writes on one loopback connection.
    func tcpLimitBatch() throws {
        if wireLine.isEmpty { try logstashBatch() }
        let start = sink.lines
        let descriptor = try sink.connect()
        defer { close(descriptor) }
        try writeLines(wireLine, count: Self.batch, to: descriptor)
        guard sink.wait(forLines: start + Self.batch, timeout: 120) else { throw BenchmarkFailure("the sink did not get 10 000 raw lines in 120 s") }
    }

    private func writeLines(_ line: [UInt8], count: Int, to descriptor: Int32) throws {
        let perBatch = max(1, (64 << 10) / line.count)
        var batch: [UInt8] = []
        for _ in 0..<perBatch { batch += line }
        var sent = 0
        try batch.withUnsafeBytes { bytes in
            while sent < count {
                let lines = min(perBatch, count - sent)
                var offset = 0
                while offset < lines * line.count {
                    let written = write(descriptor, bytes.baseAddress! + offset, lines * line.count - offset)
                    guard written > 0 else { throw BenchmarkFailure("write(2) failed: errno \(errno)") }
                    offset += written
                }
                sent += lines
            }
        }
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// `StreamLogHandler`'s stream onto a file: one `write(2)` per event, as it does on standard output.
struct FileStream: TextOutputStream, @unchecked Sendable {
    let descriptor: Int32

    init(path: String) {
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
    }

    mutating func write(_ string: String) {
        var string = string
        let descriptor = self.descriptor
        string.withUTF8 { _ = systemWrite(descriptor, $0.baseAddress!, $0.count) }
    }
}

func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, bytes, count) }

/// A loopback collector for the benchmarks: accepts connections on 127.0.0.1 and counts the lines it reads,
/// keeping the first one. One thread per connection; it lives as long as the process.
final class Sink: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var count = 0
    private var first: [UInt8] = []
    private var firstDone = false

    init() {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                Thread.detachNewThread { [self] in read(connection) }
            }
        }
    }

    var lines: Int { lock.withLock { count } }
    var firstLine: [UInt8] { lock.withLock { first } }

    func wait(forLines target: Int, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while lines < target {
            if Date() > deadline { return false }
            usleep(200)
        }
        return true
    }

    func connect() throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw BenchmarkFailure("cannot connect to the sink: errno \(errno)") }
        return descriptor
    }

    private func read(_ connection: Int32) {
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        while true {
            let received = buffer.withUnsafeMutableBytes { Glibc.read(connection, $0.baseAddress, $0.count) }
            guard received > 0 else { break }
            let chunk = buffer[0..<received]
            let newLines = chunk.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
            lock.withLock {
                count += newLines
                if !firstDone {
                    if let end = chunk.firstIndex(of: 10) {
                        first += chunk[..<end]
                        firstDone = true
                    } else {
                        first += chunk
                    }
                }
            }
        }
        close(connection)
    }
}
