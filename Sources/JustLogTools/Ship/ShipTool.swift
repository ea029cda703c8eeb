package import Foundation
import JustLog
package import JustLogCore
import JustLogLogstash

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What `justlog ship` does: sends log files written by the file destination to a Logstash-compatible
/// collector, through the same disk spool and client as the Logstash destination, resumably.
///
/// 1. Each line is read back (``FileLine``) and turned into the flattened form (``FlattenedFormat``),
///    keeping the event's own `event_id` and `@timestamp` (a line without an `event_id` gets one derived
///    from its bytes, so a rerun sends the same id). A line that can't be read back is reported as
///    `FILE:LINE: reason` and skipped.
/// 2. Records are appended to a ``LogstashSpool`` (default folder: see ``Options/resolvedSpoolDirectory``), which a
///    ``LogstashClient`` drains. Reading waits while the spool holds more than ``Options/maxSpooledBytes``,
///    so the spool never reaches its cap and drops nothing.
/// 3. After each chunk, `checkpoints.json` in the spool folder records how far each file was spooled
///    (by device and inode, so a rotated file is recognised). A rerun continues from there, and the spool
///    re-sends what was spooled but not delivered.
/// 4. Cancelling the task (the command does it on Ctrl-C) stops reading, saves the checkpoints, sends what
///    it can within the client's shutdown timeout, and throws a ``ToolError`` with exit code 130.
///
/// ```swift
/// var options = ShipTool.Options(files: ["app.log.1", "app.log"], host: "logstash.example.com", port: 5052)
/// options.caFile = "/etc/ssl/private-ca.pem"
/// let summary = try await ShipTool(options: options).run()
/// ```
package struct ShipTool: Sendable {
    /// How `justlog ship` runs.
    package struct Options: Sendable {
        /// The log files, shipped in this order (oldest first).
        package var files: [String]
        /// The collector.
        package var host: String
        package var port: Int
        /// TLS (default `true`); `false` is plain TCP.
        package var useTLS: Bool
        /// PEM bundle of CAs to trust instead of the system roots.
        package var caFile: String?
        /// TLS without certificate verification (a warning is printed).
        package var allowUntrustedServer: Bool
        /// The spool folder (default: see ``resolvedSpoolDirectory``); it also holds `checkpoints.json`.
        package var spoolDirectory: String?
        /// Longest time to connect and finish the TLS handshake (default 10 s).
        package var connectTimeout: Duration
        /// Longest time delivery may make no progress — lost connections, or a collector that accepted and stopped
        /// reading — before giving up with the count left in the spool (default 60 s).
        package var stallTimeout: Duration
        /// How long a write may wait for the collector to read before the connection is dropped and made again (the
        /// client's ``LogstashClient/Configuration/writeTimeout``; default 30 s).
        package var writeTimeout: Duration = .seconds(30)
        /// Reading pauses while the spool holds more than this (default 24 MiB; the spool's cap is 64 MiB).
        package var maxSpooledBytes: Int
        /// How often progress is shown (default: 0.1 s on a terminal, 2 s otherwise).
        package var progressInterval: Duration?
        /// Where progress goes (default standard error; a bar on a terminal, lines otherwise).
        package var progress: TextOutput
        /// Where the summary goes (default standard output).
        package var output: TextOutput
        /// Where malformed-line reports and warnings go (default standard error).
        package var errors: TextOutput
        /// Called after each chunk is spooled and checkpointed (tests use it to interrupt at a known point).
        package var onChunk: (@Sendable (Progress) -> Void)?

        package init(
            files: [String],
            host: String,
            port: Int,
            useTLS: Bool = true,
            caFile: String? = nil,
            allowUntrustedServer: Bool = false,
            spoolDirectory: String? = nil,
            connectTimeout: Duration = .seconds(10),
            stallTimeout: Duration = .seconds(60),
            maxSpooledBytes: Int = 24 << 20,
            progressInterval: Duration? = nil,
            progress: TextOutput = .standardError,
            output: TextOutput = .standardOutput,
            errors: TextOutput = .standardError,
            onChunk: (@Sendable (Progress) -> Void)? = nil
        ) {
            self.files = files
            self.host = host
            self.port = port
            self.useTLS = useTLS
            self.caFile = caFile
            self.allowUntrustedServer = allowUntrustedServer
            self.spoolDirectory = spoolDirectory
            self.connectTimeout = connectTimeout
            self.stallTimeout = stallTimeout
            self.maxSpooledBytes = maxSpooledBytes
            self.progressInterval = progressInterval
            self.progress = progress
            self.output = output
            self.errors = errors
            self.onChunk = onChunk
        }

        /// The spool folder used: ``spoolDirectory``, or by default one per set of input files and collector in
        /// the user's cache folder — `$XDG_CACHE_HOME/justlog/ship/<first file's name>-<hash>` (`~/.cache/…`;
        /// the caches directory on Apple platforms) — never next to the input, which may be read-only or shared.
        /// The same command finds the same folder again, so a rerun continues where the last one stopped.
        package var resolvedSpoolDirectory: String {
            spoolDirectory ?? defaultSpoolDirectory(cache: LogFolder.defaultFolder(programName: "justlog"))
        }

        /// The default spool folder under `cache`.
        package func defaultSpoolDirectory(cache: URL) -> String {
            let paths = files.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            let identity = (paths + ["\(host):\(port)"]).joined(separator: "\n")
            let hash = SHA256.hash(Array(identity.utf8)).prefix(6).map { String(format: "%02x", $0) }.joined()
            let name = URL(fileURLWithPath: files.first ?? "input").lastPathComponent
            return cache.appendingPathComponent("ship", isDirectory: true).appendingPathComponent(
                "\(name)-\(hash)",
                isDirectory: true
            ).path
        }
    }

    /// Where shipping stands.
    package struct Progress: Sendable, Hashable {
        /// Bytes of the input read and spooled this run, of ``totalBytes``.
        package var bytesRead = 0
        /// Bytes to read this run (after the checkpoints).
        package var totalBytes = 0
        /// Events spooled this run.
        package var eventsSpooled = 0
        /// Events written to the collector this run (resends included).
        package var eventsSent: UInt64 = 0
        /// Lines skipped because they could not be read back or were too large.
        package var skipped = 0
    }

    /// What the run did.
    package struct Summary: Sendable, Hashable {
        package var files = 0
        /// Bytes skipped because an earlier run had shipped them.
        package var resumedBytes = 0
        package var progress = Progress()
        /// Events left undelivered in the spool at the end (0 after a complete run).
        package var leftInSpool = 0
        package var elapsed: Duration = .zero
        package var spoolDirectory = ""
    }

    package var options: Options

    package init(options: Options) {
        self.options = options
    }

    /// Ships every file; see the type's discussion.
    ///
    /// - Throws: ``ToolError`` — bad options, a missing file, an unusable spool folder, a collector that
    ///   can't be reached, a refused certificate (exit code 1), or the interruption (exit code 130).
    @discardableResult
    package func run() async throws -> Summary {
        try validate()
        let start = ContinuousClock.now
        let spoolDirectory = options.resolvedSpoolDirectory
        // Open every file first: a wrong name fails before anything is sent.
        let readers = try options.files.map { try LogFileReader(path: $0) }
        let lock = try SpoolFolderLock(directory: spoolDirectory)
        defer { lock.release() }
        var checkpoints = try ShipCheckpoints.load(folder: spoolDirectory)

        let spool: LogstashSpool
        do {
            spool = try LogstashSpool(configuration: .init(directory: spoolDirectory))
        } catch let error as LogstashError {
            throw ToolError(
                error.message.contains("newer version of JustLog")
                    ? "can't use the spool folder \(spoolDirectory): \(error.message)"
                    : "can't use the spool folder \(spoolDirectory): \(error.message); pass --spool with a writable folder"
            )
        }
        defer { spool.close() }
        let client = try makeClient(spool: spool)
        client.start()

        // Resume each file from its checkpoint.
        var summary = Summary(files: readers.count, spoolDirectory: spoolDirectory)
        var inputs: [(reader: LogFileReader, entry: ShipCheckpoints.Entry)] = []
        var seen: Set<[UInt64]> = []
        for reader in readers {
            guard seen.insert([reader.device, reader.inode]).inserted else { continue }
            var entry = ShipCheckpoints.Entry(
                path: reader.path,
                device: reader.device,
                inode: reader.inode,
                offset: 0,
                line: 0,
                head: ""
            )
            if let saved = checkpoints.entry(device: reader.device, inode: reader.inode, path: reader.path),
                saved.offset <= reader.openFileSize
            {
                entry = saved
                entry.path = reader.path
            }
            inputs.append((try LogFileReader(path: reader.path, offset: entry.offset, lineNumber: entry.line), entry))
            summary.resumedBytes += entry.offset
            summary.progress.totalBytes += max(0, reader.openFileSize - entry.offset)
        }

        var display = ProgressDisplay(options: options, target: "\(options.host):\(options.port)")
        var interrupted = false
        var filesWithoutLogLines: [String] = []
        reading: for index in inputs.indices {
            let reader = inputs[index].reader
            let (spooledBefore, skippedBefore) = (summary.progress.eventsSpooled, summary.progress.skipped)
            defer {
                if summary.progress.eventsSpooled == spooledBefore && summary.progress.skipped > skippedBefore {
                    filesWithoutLogLines.append(reader.path)
                }
            }
            while true {
                if Task.isCancelled {
                    interrupted = true
                    break reading
                }
                // Backpressure: let the client drain before spooling more.
                var watch = StallWatch(timeout: options.stallTimeout)
                while spool.counterSnapshot.queuedBytes > options.maxSpooledBytes {
                    if Task.isCancelled {
                        interrupted = true
                        break reading
                    }
                    try await checkDelivery(client, spool: spool, summary: summary)
                    try? await Task.sleep(for: .milliseconds(20))
                    summary.progress.eventsSent = await client.counters().sent
                    display.show(summary.progress)
                    if watch.isStalled(sent: summary.progress.eventsSent, queued: spool.counterSnapshot.queuedRecords) {
                        await client.shutdown()
                        throw stalled(queued: spool.counterSnapshot.queuedRecords)
                    }
                }
                var lines = reader.readLines(maxBytes: 256 << 10) ?? []
                let atEnd = lines.isEmpty
                if atEnd, let last = reader.finishPartialLine() { lines.append(last) }
                if lines.isEmpty { break }
                let before = inputs[index].entry.offset
                try spoolLines(lines, from: reader, into: spool, progress: &summary.progress)
                client.recordsAppended(lines.count)
                inputs[index].entry.offset = lines.last!.endOffset
                inputs[index].entry.line = lines.last!.number
                inputs[index].entry.head = ShipCheckpoints.head(of: reader.path, upTo: inputs[index].entry.offset)
                summary.progress.bytesRead += inputs[index].entry.offset - before
                checkpoints.update(inputs[index].entry)
                try checkpoints.save(folder: spoolDirectory)
                summary.progress.eventsSent = await client.counters().sent
                display.show(summary.progress)
                options.onChunk?(summary.progress)
                if atEnd { break }
            }
        }

        // Deliver what is spooled.
        if !interrupted {
            interrupted = try await deliverAll(client, spool: spool, summary: summary, display: &display)
        }
        await client.shutdown()
        summary.progress.eventsSent = await client.counters().sent
        summary.leftInSpool = spool.counterSnapshot.queuedRecords
        summary.elapsed = ContinuousClock.now - start
        display.finish(summary.progress)
        let unlisted = summary.progress.skipped - Self.listedProblems
        if unlisted > 0 { options.errors.write(Array("… and \(unlisted) more line(s) skipped\n".utf8)) }
        if interrupted {
            throw ToolError(
                "interrupted: \(summary.progress.eventsSpooled) event(s) spooled this run, \(summary.leftInSpool) not yet delivered stay in \(spoolDirectory); run the same command again to continue",
                exitCode: ToolError.interrupted
            )
        }
        if summary.leftInSpool > 0 {
            // Say why, when a connection error explains it (a TLS/plain mismatch, a collector that closes at once).
            let reason = await client.counters().lastConnectionError.map { ": \($0)" } ?? ""
            throw ToolError(
                "\(summary.leftInSpool) event(s) could not be delivered to \(options.host):\(options.port)\(reason); they stay in \(spoolDirectory): run the same command again to send them"
            )
        }
        options.output.write(Array(Self.summaryText(summary, options: options).utf8))
        if !filesWithoutLogLines.isEmpty {
            throw ToolError(
                "\(filesWithoutLogLines.map(TerminalSafeText.escape).joined(separator: ", ")) has no log line: give files written by JustLog's file destination"
            )
        }
        return summary
    }

    /// Skipped lines listed one by one; past it they are only counted, and the count is said at the end.
    static let listedProblems = 20

    // MARK: - Steps

    private func validate() throws {
        guard !options.files.isEmpty else {
            throw ToolError.usage("no log file given: name one or more files written by the file destination")
        }
        guard !options.host.isEmpty else { throw ToolError.usage("no collector given: pass --host and --port") }
        guard (1...65535).contains(options.port) else {
            throw ToolError.usage("--port \(options.port) is not a TCP port: give 1–65535")
        }
        if let caFile = options.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ToolError.usage(
                "--ca-file \(caFile): no such readable file; give the PEM file of the collector's CA certificate"
            )
        }
    }

    private func makeClient(spool: LogstashSpool) throws -> LogstashClient {
        var configuration = LogstashClient.Configuration(host: options.host, port: options.port)
        configuration.useTLS = options.useTLS
        configuration.caFile = options.caFile
        configuration.allowUntrustedServer = options.allowUntrustedServer
        configuration.sendInterval = .milliseconds(50)
        configuration.connectTimeout = options.connectTimeout
        configuration.writeTimeout = options.writeTimeout
        configuration.backoffMaximum = .seconds(5)
        configuration.shutdownTimeout = .seconds(5)
        let errors = options.errors
        do {
            return try LogstashClient(
                configuration: configuration,
                spool: spool,
                warning: { line in
                    errors.write(
                        Array(
                            "justlog: \(line.replacingOccurrences(of: "JustLog WARNING: allowUntrustedServer is on", with: "WARNING: --allow-untrusted"))\n"
                                .utf8
                        )
                    )
                }
            )
        } catch let error as LogstashError {
            throw ToolError(error.message)
        }
    }

    /// Converts lines to flattened records and appends them to the spool; malformed lines are reported.
    private func spoolLines(
        _ lines: [LogFileReader.Line],
        from reader: LogFileReader,
        into spool: LogstashSpool,
        progress: inout Progress
    ) throws {
        var problems = ""
        for line in lines {
            if line.tooLong {
                progress.skipped += 1
                if progress.skipped <= Self.listedProblems {
                    problems +=
                        "\(reader.path):\(line.number): line longer than \(LogFileReader.maxLineBytes) bytes, skipped\n"
                }
                continue
            }
            if line.bytes.isEmpty { continue }
            let record: [UInt8]
            do {
                record = try Self.flattened(line.bytes)
            } catch {
                progress.skipped += 1
                if progress.skipped <= Self.listedProblems {
                    problems +=
                        "\(TerminalSafeText.escape(reader.path)):\(line.number): \(TerminalSafeText.escape(error.message)), skipped\n"
                }
                continue
            }
            do {
                try spool.append(record)
                progress.eventsSpooled += 1
            } catch let error as LogstashError where error.code == .recordTooLarge {
                progress.skipped += 1
                if progress.skipped <= Self.listedProblems {
                    problems += "\(reader.path):\(line.number): \(error.message), skipped\n"
                }
            } catch let error as LogstashError {
                throw ToolError("can't append to the spool \(spool.configuration.directory): \(error.message)")
            }
        }
        if !problems.isEmpty { options.errors.write(Array(problems.utf8)) }
    }

    /// The flattened JSON of a file line, keeping its `event_id` and timestamp.
    static func flattened(_ line: [UInt8]) throws(JustLogError) -> [UInt8] {
        var record = try FileLine(parsing: Substring(String(decoding: line, as: UTF8.self))).record
        if record.eventID.isEmpty {
            // Older files: an id derived from the line, the same on every run, so a collector can drop resends.
            let id = "ship-" + String(ShipCheckpoints.fnv1a64(line), radix: 16)
            record.eventID = id
            record.metadata[MetadataKey.eventID] = .string(id)
        }
        if record.metadata[MetadataKey.timestamp] == nil {
            record.metadata[MetadataKey.timestamp] = .string(record.timestamp.rfc3339)
        }
        return FlattenedFormat.encode(record)
    }

    /// Fails fast when the collector can't be reached at all (never connected) or a certificate is refused.
    private func checkDelivery(_ client: LogstashClient, spool: LogstashSpool, summary: Summary) async throws {
        let counters = await client.counters()
        if counters.connects == 0, counters.connectionErrors > 0 {
            // Ask for a flush to learn why (it fails at once when the connection attempt failed).
            if case .failure(let error) = await flushOutcome(client) {
                throw describe(error, queued: spool.counterSnapshot.queuedRecords)
            }
        }
    }

    /// Flushes until everything spooled is written, retrying after lost connections while delivery makes
    /// progress; `true` if interrupted.
    private func deliverAll(
        _ client: LogstashClient,
        spool: LogstashSpool,
        summary: Summary,
        display: inout ProgressDisplay
    ) async throws -> Bool {
        var lastProgress = ContinuousClock.now
        var lastQueued = spool.counterSnapshot.queuedRecords
        var progress = summary.progress
        while true {
            let outcome = await flushOutcome(client, spool: spool) {
                progress.eventsSent = $0
                display.show(progress)
            }
            switch outcome {
            case .interrupted:
                return true
            case .success:
                return false
            case .stalled:
                await client.shutdown()
                throw stalled(queued: spool.counterSnapshot.queuedRecords)
            case .failure(let error):
                let counters = await client.counters()
                let queued = spool.counterSnapshot.queuedRecords
                if queued < lastQueued {
                    lastQueued = queued
                    lastProgress = .now
                }
                // Never connected, or a refused certificate: no point retrying.
                if counters.connects == 0 || (error as? LogstashError)?.code == .certificateRejected
                    || ContinuousClock.now - lastProgress > options.stallTimeout
                {
                    await client.shutdown()
                    throw describe(error, queued: spool.counterSnapshot.queuedRecords)
                }
                if Task.isCancelled { return true }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    private enum FlushOutcome {
        case success
        case failure(any Error)
        case interrupted
        /// Nothing was written and nothing left the spool for the stall timeout: the collector stopped reading.
        case stalled
    }

    /// Runs one flush, polling so that cancellation is noticed within 20 ms; `sent` gets progress. A write to a
    /// collector that stopped reading never fails, so the flush is given up when nothing moves for the stall timeout.
    private func flushOutcome(
        _ client: LogstashClient,
        spool: LogstashSpool? = nil,
        sent: (UInt64) -> Void = { _ in }
    ) async -> FlushOutcome {
        let result = LockedValue<(any Error)??>(nil)
        client.flush { error in result.withLock { $0 = .some(error) } }
        var ticks = 0
        var watch = StallWatch(timeout: options.stallTimeout)
        while true {
            if let done = result.withLock({ $0 }) {
                if let error = done { return .failure(error) }
                return .success
            }
            if Task.isCancelled { return .interrupted }
            try? await Task.sleep(for: .milliseconds(20))
            ticks += 1
            if ticks % 5 == 0 {
                let written = await client.counters().sent
                sent(written)
                if let spool, watch.isStalled(sent: written, queued: spool.counterSnapshot.queuedRecords) {
                    return .stalled
                }
            }
        }
    }

    /// The error for a collector that accepted the connection and stopped reading.
    private func stalled(queued: Int) -> ToolError {
        ToolError(
            "\(options.host):\(options.port) accepted the connection but stopped reading: nothing was delivered for \(options.stallTimeout); \(queued) event(s) stay in \(options.resolvedSpoolDirectory) for the next run"
        )
    }

    private func describe(_ error: any Error, queued: Int) -> ToolError {
        let target = "\(options.host):\(options.port)"
        let left = queued > 0 ? "; \(queued) event(s) stay in \(options.resolvedSpoolDirectory) for the next run" : ""
        guard let error = error as? LogstashError else { return ToolError("can't ship to \(target): \(error)\(left)") }
        switch error.code {
        case .certificateRejected:
            return ToolError(
                "the TLS certificate of \(target) was refused (untrusted, expired or for another host): pass --ca-file with the collector's CA certificate, or --allow-untrusted to skip verification\(left)"
            )
        case .connectFailed:
            let cause = error.cause.map { Self.shortCause("\($0)") } ?? "no answer"
            return ToolError(
                "can't connect to \(target) (\(cause)): check --host and --port and that the collector is running\(left)"
            )
        default:
            return ToolError(
                "can't ship to \(target): \(error.message)\(error.cause.map { " (\(Self.shortCause("\($0)")))" } ?? "")\(left)"
            )
        }
    }

    /// The useful part of a NIO error description, on one line.
    static func shortCause(_ cause: String) -> String {
        let lowered = cause.lowercased()
        if lowered.contains("connection refused") { return "connection refused" }
        if lowered.contains("timed out") || lowered.contains("timeout") { return "timed out" }
        if lowered.contains("resolve") || lowered.contains("no address") || lowered.contains("name or service") {
            return "unknown host"
        }
        let line = cause.split(separator: "\n").first.map(String.init) ?? cause
        return line.count > 160 ? String(line.prefix(160)) + "…" : line
    }

    static func summaryText(_ summary: Summary, options: Options) -> String {
        let seconds = summary.elapsed.totalSeconds
        let rate = seconds > 0 ? Int(Double(summary.progress.eventsSpooled) / seconds) : 0
        var text =
            "justlog: shipped \(summary.progress.eventsSpooled) event(s) (\(ProgressDisplay.bytes(summary.progress.bytesRead))) from \(summary.files) file(s) to \(options.host):\(options.port) in \(String(format: "%.1f", seconds)) s (\(rate) events/s)"
        if summary.resumedBytes > 0 {
            text += "; resumed after \(ProgressDisplay.bytes(summary.resumedBytes)) shipped earlier"
        }
        if summary.progress.skipped > 0 { text += "; \(summary.progress.skipped) line(s) skipped" }
        return text + "\n"
    }
}

// MARK: - Spool folder lock

/// An exclusive `flock` on `<spool>/ship.lock`: two ships on one spool would corrupt it.
final class SpoolFolderLock {
    private var fd: Int32

    /// Takes the lock, waiting up to `patience` for it (as the spool waits for its own): a ship that is finishing
    /// lets it go within moments, and so does a process another thread was starting just then, which holds the
    /// descriptor from its `fork` to its `exec` (a test's rerun found the lock held under load, CI of part 39).
    init(directory: String, patience: Duration = .seconds(1)) throws {
        // The default folder's parents (`~/.cache/justlog/ship`) may not exist yet: owner-only, as the spool.
        let parent = URL(fileURLWithPath: directory).deletingLastPathComponent().path
        try? FileManager.default.createDirectory(
            atPath: parent,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw ToolError(
                "can't create the spool folder \(directory): \(String(cString: strerror(errno))); pass --spool with a writable folder"
            )
        }
        fd = open(directory + "/ship.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw ToolError(
                "can't use the spool folder \(directory): \(String(cString: strerror(errno))); pass --spool with a writable folder"
            )
        }
        guard lockExclusively(fd, wait: patience) else {
            _ = close(fd)
            fd = -1
            throw ToolError("another justlog ship is using \(directory); wait for it to finish or pass another --spool")
        }
    }

    func release() {
        guard fd >= 0 else { return }
        _ = close(fd)
        fd = -1
    }

    deinit { release() }
}
