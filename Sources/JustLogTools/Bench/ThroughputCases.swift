import Foundation
import JustLog
import JustLogCore
import JustLogLogstash

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The end-to-end cases of ``BenchSuite``: events per second into a rotating file and to a collector on
/// loopback, each beside the limit of the same bytes sent without a logger (preformatted lines in 64 KiB
/// `write(2)` calls), and the Logstash spool's bytes per event.
struct ThroughputCases {
    let folder: URL
    let events: Int
    /// Bytes per `write(2)` of the limit cases.
    static let batchBytes = 64 << 10

    func run() throws -> ThroughputMeasurement {
        let (fileRate, fileLine) = try fileEventsPerSecond()
        let fileLimit = try fileLimitEventsPerSecond(line: fileLine)
        let (logstashRate, wireLine) = try logstashEventsPerSecond()
        let tcpLimit = try tcpLimitEventsPerSecond(line: wireLine)
        let spoolBytes = try spoolBytesPerEvent()
        return ThroughputMeasurement(
            events: events,
            fileEventsPerSecond: fileRate,
            fileLimitEventsPerSecond: fileLimit,
            fileLineBytes: fileLine.count,
            logstashEventsPerSecond: logstashRate,
            tcpLimitEventsPerSecond: tcpLimit,
            wireLineBytes: wireLine.count,
            logstashSpoolBytesPerEvent: spoolBytes
        )
    }

    /// The documented call into a file destination with its default rotation (10 MiB, 5 files), from the first
    /// call until the pipeline has flushed the file. Returns the rate and the first line written. `typed`: the same
    /// event through `fields:` (its values read at run time), whose call costs half as much — what the pipeline's
    /// thread reaches when the caller is cheaper.
    func fileEventsPerSecond(typed: Bool = false) throws -> (Double, [UInt8]) {
        let directory = try scratch("file")
        let url = directory.appendingPathComponent("bench.log")
        let logger = JustLog.Logger(configuration: .init(console: nil, file: .init(url: url)))
        defer { logger.shutdown() }
        let start = monotonicNanoseconds()
        logTheEvent(events, typed: typed, to: logger)
        if let error = logger.pipeline.flush(timeout: 600) {
            throw ToolError("bench: the file did not flush: \(error)")
        }
        let elapsed = monotonicNanoseconds() - start
        let written = try firstLine(of: url, orRotatedIn: directory)
        return (Double(events) * 1e9 / Double(elapsed), written)
    }

    /// Logs the measured event `count` times: the documented call, or (`typed`) the same event through `fields:`,
    /// its values read at run time.
    private func logTheEvent(_ count: Int, typed: Bool, to logger: JustLog.Logger) {
        guard typed else {
            for _ in 0..<count {
                logger.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
            }
            return
        }
        let runtime = RuntimeValues.make()
        for _ in 0..<count {
            logger.info(
                "user signed in",
                fields: [
                    "userID": .int(runtime.userID), "plan": .string(runtime.plan), "attempt": .int(runtime.attempt),
                ]
            )
        }
    }

    /// The file limit: the same line, preformatted, in 64 KiB `write(2)` calls.
    private func fileLimitEventsPerSecond(line: [UInt8]) throws -> Double {
        let directory = try scratch("file-limit")
        let descriptor = open(
            directory.appendingPathComponent("raw.log").path,
            O_WRONLY | O_CREAT | O_TRUNC | O_APPEND,
            0o600
        )
        guard descriptor >= 0 else { throw ToolError("bench: cannot open a file in \(directory.path)") }
        defer { closeDescriptor(descriptor) }
        let (batch, linesPerBatch) = Self.batch(of: line + [UInt8(ascii: "\n")])
        let start = monotonicNanoseconds()
        var sent = 0
        try batch.withUnsafeBytes { bytes in
            while sent < events {
                let lines = min(linesPerBatch, events - sent)
                try writeAll(descriptor, bytes.baseAddress!, lines * (line.count + 1))
                sent += lines
            }
        }
        return Double(events) * 1e9 / Double(monotonicNanoseconds() - start)
    }

    /// The documented call into a Logstash destination (plain TCP to a loopback sink, spool in a scratch
    /// folder), from the first call until the sink has read every line. Returns the rate and a line as sent.
    /// `typed`: the same event through `fields:` — a caller about half as costly as the `[String: Any]` literal's,
    /// so that the rate is the background's (the pipeline's and the network's threads), not the caller's.
    func logstashEventsPerSecond(typed: Bool = false) throws -> (Double, [UInt8]) {
        let sink = try LoopbackSink()
        defer { sink.stop() }
        let directory = try scratch("logstash")
        // A drop (the spool's cap, a stalled queue) means some lines will never come: fail, saying why.
        let reports = LockedValue<[String]>([])
        let logger = JustLog.Logger(
            configuration: .init(
                console: nil,
                logstash: .init(
                    host: "127.0.0.1",
                    port: UInt16(sink.port),
                    sendInterval: 0.05,
                    useTLS: false,
                    spoolFolder: directory.appendingPathComponent("spool", isDirectory: true),
                    // Four times the default 64 MiB: json_lines keeps each line until the connection's resend window
                    // (our send buffer plus twice the peer's largest receive window, up to ~70 MiB on a host whose
                    // tcp_rmem allows 32 MiB, as this machine kind's does) more bytes followed it. A spool smaller
                    // than that window drops lines at its cap during a burst of 500,000 (~170 MB), collector up or not.
                    spoolCapacity: 256 << 20
                ),
                diagnostics: .init { line in reports.withLock { $0.append(line) } }
            )
        )
        defer { logger.shutdown() }
        let start = monotonicNanoseconds()
        logTheEvent(events, typed: typed, to: logger)
        logger.forceSend()
        guard sink.waitForLines(events, timeout: 600, lost: { reports.current.contains { $0.contains("drop") } })
        else {
            let why = reports.current.joined(separator: "\n")
            throw ToolError(
                "bench: the sink got \(sink.counts.lines) of \(events) events\(why.isEmpty ? " within 600 s" : ":\n\(why)")"
            )
        }
        let elapsed = monotonicNanoseconds() - start
        return (Double(events) * 1e9 / Double(elapsed), sink.firstLine)
    }

    /// The network limit: the same line, preformatted, in 64 KiB `write(2)` calls on one loopback connection,
    /// until the sink has read every line.
    private func tcpLimitEventsPerSecond(line: [UInt8]) throws -> Double {
        let sink = try LoopbackSink()
        defer { sink.stop() }
        let descriptor = try connectLoopback(port: sink.port)
        defer { closeDescriptor(descriptor) }
        let (batch, linesPerBatch) = Self.batch(of: line + [UInt8(ascii: "\n")])
        let start = monotonicNanoseconds()
        var sent = 0
        try batch.withUnsafeBytes { bytes in
            while sent < events {
                let lines = min(linesPerBatch, events - sent)
                try writeAll(descriptor, bytes.baseAddress!, lines * (line.count + 1))
                sent += lines
            }
        }
        guard sink.waitForLines(events, timeout: 600) else {
            throw ToolError("bench: the sink got \(sink.counts.lines) of \(events) raw lines within 600 s")
        }
        return Double(events) * 1e9 / Double(monotonicNanoseconds() - start)
    }

    /// Bytes the Logstash spool takes per event (frames included): 1000 documented calls with no collector
    /// listening, then the spool's extent from its cursor to its end.
    private func spoolBytesPerEvent() throws -> Double {
        let directory = try scratch("spool")
        let spoolFolder = directory.appendingPathComponent("spool", isDirectory: true)
        let refused = try RefusedLoopbackPort()
        defer { withExtendedLifetime(refused) {} }
        let logger = JustLog.Logger(
            configuration: .init(
                console: nil,
                logstash: .init(
                    host: "127.0.0.1",
                    port: refused.port,
                    sendInterval: 3600,
                    useTLS: false,
                    spoolFolder: spoolFolder
                ),
                diagnostics: .init { _ in }
            )
        )
        let count = 1000
        for _ in 0..<count {
            logger.info("user signed in", userInfo: ["userID": 42, "plan": "gold", "attempt": 1])
        }
        logger.shutdown(timeout: 1)
        let spool = try LogstashSpool(configuration: .init(directory: spoolFolder.path), diagnostics: .init { _ in })
        defer { spool.close() }
        let start = spool.cursor
        let end = spool.endPosition
        let records = spool.counterSnapshot.queuedRecords
        guard start.segment == end.segment, records > 0 else {
            throw ToolError("bench: the spool holds \(records) records over segments \(start.segment)…\(end.segment)")
        }
        return Double(end.offset - start.offset) / Double(records)
    }

    /// An empty directory for a case, once the kernel has written back what earlier cases left dirty: otherwise a
    /// case pays for the last one's writeback (the raw `write(2)` limit swung from 1.2 M to 8.2 M lines/s over
    /// whole runs), and its figure is not its own.
    private func scratch(_ name: String) throws -> URL {
        let directory = folder.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        sync()
        return directory
    }

    /// `line` repeated to fill (at most) one 64 KiB batch, and how many lines that is.
    private static func batch(of line: [UInt8]) -> ([UInt8], Int) {
        let lines = max(1, batchBytes / max(line.count, 1))
        var batch: [UInt8] = []
        batch.reserveCapacity(lines * line.count)
        for _ in 0..<lines { batch += line }
        return (batch, lines)
    }

    private func firstLine(of url: URL, orRotatedIn directory: URL) throws -> [UInt8] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        for name in [url.lastPathComponent] + files {
            let data = (try? Data(contentsOf: directory.appendingPathComponent(name))) ?? Data()
            if let end = data.firstIndex(of: UInt8(ascii: "\n")) { return Array(data[data.startIndex..<end]) }
        }
        throw ToolError("bench: the file destination wrote nothing in \(directory.path)")
    }
}

/// What the throughput cases measured.
package struct ThroughputMeasurement: Sendable {
    package var events: Int
    package var fileEventsPerSecond: Double
    package var fileLimitEventsPerSecond: Double
    package var fileLineBytes: Int
    package var logstashEventsPerSecond: Double
    package var tcpLimitEventsPerSecond: Double
    package var wireLineBytes: Int
    package var logstashSpoolBytesPerEvent: Double
}

private func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) throws {
    var offset = 0
    while offset < count {
        let written = writeBytes(descriptor, bytes + offset, count - offset)
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { throw ToolError("bench: write(2) failed (errno \(errno))") }
        offset += written
    }
}

/// A blocking TCP connection to 127.0.0.1:`port`.
private func connectLoopback(port: Int) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw ToolError("bench: socket() failed (errno \(errno))") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        let code = errno
        closeDescriptor(descriptor)
        throw ToolError("bench: cannot connect to 127.0.0.1:\(port) (errno \(code))")
    }
    return descriptor
}

/// A loopback port nothing listens on, for a collector that is down: held bound (with `SO_REUSEADDR`, never
/// listening) while it lives, so that connects to it are refused and the kernel gives it to no other socket of the
/// process — a port bound and let go could be taken by another server at once (a test's, run beside the bench),
/// which would then receive what was meant to stay spooled.
private final class RefusedLoopbackPort {
    let port: UInt16
    private let descriptor: Int32

    init() throws {
        let (descriptor, port) = try loopbackSocket(listeningWithBacklog: nil, what: "bench")
        self.descriptor = descriptor
        self.port = UInt16(port)
    }

    deinit { close(descriptor) }
}
