package import Foundation
package import JustLogCore
import JustLogLogstash
import JustLogReceivers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What `justlog receive` does: runs a Logstash-compatible `json_lines` receiver — or, with
/// ``Options/wireProtocol`` `.beats`, a Beats (Lumberjack v2) server like Logstash's `beats` input — over TCP
/// or TLS, and shows every event readably — or appends each raw line to a file — until the task running it
/// is cancelled (the command cancels it on Ctrl-C / SIGTERM), then prints how many events it received.
///
/// With Beats, each event is acknowledged to the client only once it has been printed or appended to the
/// file: events that could not be written (a full disk) are not acknowledged, and the client sends them again.
///
/// - Events go to ``Options/output``: each raw JSON line as received (for piping into `jq`; made
///   terminal-safe only when the output is a terminal); with ``Options/pretty``, one readable line each
///   (time, level, message, then `key=value`), terminal-safe, colored on a terminal.
/// - With ``Options/outFile`` each valid line is appended, as received, to that file (created 0600).
/// - Status lines and invalid lines (`connection N line M: reason`) go to ``Options/errors``.
///
/// ```swift
/// let tool = ReceiveTool(options: .init(port: 0))
/// let task = Task { try await tool.run { port in print("listening on \(port)") } }
/// // … later, on Ctrl-C:
/// task.cancel()
/// let summary = try await task.value   // summary.events, summary.invalid
/// ```
package struct ReceiveTool: Sendable {
    /// How `justlog receive` runs.
    package struct Options: Sendable {
        /// The protocol spoken (default json_lines).
        package enum WireProtocol: String, Sendable, CaseIterable {
            /// One JSON object per line (Logstash's `tcp` input with the `json_lines` codec).
            case jsonLines = "json_lines"
            /// Lumberjack v2 (Logstash's `beats` input): windows, compressed frames, ACKs.
            case beats
        }

        /// The protocol spoken (default ``WireProtocol/jsonLines``).
        package var wireProtocol: WireProtocol = .jsonLines
        /// Address to listen on (default `127.0.0.1`: this machine only).
        package var host: String
        /// Port to listen on (default 5000, the `logstashPort` default; 0 picks a free one).
        package var port: Int
        /// Serve TLS with this PEM certificate (needs ``tlsKeyFile``).
        package var tlsCertificateFile: String?
        /// The PEM private key of ``tlsCertificateFile``.
        package var tlsKeyFile: String?
        /// Append each raw line to this file instead of printing events.
        package var outFile: String?
        /// Print each event's JSON, indented, instead of one line.
        package var pretty: Bool
        /// When event lines are colored (default: on a terminal).
        package var colors: ConsoleDestination.ColorMode
        /// The zone of the times shown (default: local).
        package var timeZone: TimeZone
        /// Where events go (default standard output).
        package var output: TextOutput
        /// Where status lines and invalid lines go (default standard error).
        package var errors: TextOutput

        package init(
            host: String = "127.0.0.1",
            port: Int = 5000,
            tlsCertificateFile: String? = nil,
            tlsKeyFile: String? = nil,
            outFile: String? = nil,
            pretty: Bool = false,
            colors: ConsoleDestination.ColorMode = .automatic,
            timeZone: TimeZone = .current,
            output: TextOutput = .standardOutput,
            errors: TextOutput = .standardError
        ) {
            self.host = host
            self.port = port
            self.tlsCertificateFile = tlsCertificateFile
            self.tlsKeyFile = tlsKeyFile
            self.outFile = outFile
            self.pretty = pretty
            self.colors = colors
            self.timeZone = timeZone
            self.output = output
            self.errors = errors
        }
    }

    /// What was received, printed when the tool stops.
    package struct Summary: Sendable, Hashable {
        /// Valid JSON lines.
        package var events: Int
        /// Lines that were not JSON or too long.
        package var invalid: Int
        /// Connections accepted.
        package var connections: Int

        package init(events: Int, invalid: Int, connections: Int) {
            self.events = events
            self.invalid = invalid
            self.connections = connections
        }
    }

    package var options: Options

    package init(options: Options) {
        self.options = options
    }

    /// Receives until the task is cancelled; `onReady` gets the bound port once listening.
    ///
    /// - Throws: ``ToolError`` for bad options, an unusable `--out` file, a port in use or an unreadable
    ///   certificate — one line that says what to do.
    package func run(onReady: @Sendable (Int) -> Void = { _ in }) async throws -> Summary {
        let tls = try validatedTLS()
        if options.outFile != nil && options.pretty {
            throw ToolError.usage(
                "--out and --pretty can't be used together: --out writes raw lines to a file, --pretty prints them"
            )
        }
        guard (0...65535).contains(options.port) else {
            throw ToolError.usage("--port \(options.port) is not a TCP port: give 1–65535, or 0 for a free one")
        }
        let sink = try options.outFile.map(AppendingFile.init(path:))
        defer { sink?.close() }

        let printer = Printer(options: options, sink: sink)
        let jsonLines: JSONLinesReceiver?
        let beats: BeatsReceiver?
        switch options.wireProtocol {
        case .jsonLines:
            jsonLines = JSONLinesReceiver(
                configuration: .init(host: options.host, port: options.port, tls: tls),
                handler: printer.handle
            )
            beats = nil
        case .beats:
            jsonLines = nil
            let errors = options.errors
            beats = BeatsReceiver(
                configuration: .init(host: options.host, port: options.port, tls: tls),
                activity: { line in
                    // Only what goes wrong: opened/closed lines would drown the events.
                    if line.contains("closing it") { errors.write(Array("justlog: \(line)\n".utf8)) }
                },
                handler: printer.handle
            )
        }
        let port: Int
        do {
            if let jsonLines {
                port = try await jsonLines.start()
            } else {
                port = try await beats?.start() ?? 0
            }
        } catch let error as LogstashError {
            throw ToolError(error.message)
        }
        let mode = tls == nil ? "plain TCP" : "TLS"
        let destination = options.outFile.map { "appending raw lines to \($0)" } ?? "printing events"
        options.errors.write(
            Array(
                "justlog: listening on \(options.host):\(port) (\(mode), \(options.wireProtocol.rawValue)), \(destination); Ctrl-C to stop\n"
                    .utf8
            )
        )
        onReady(port)

        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
        let summary: Summary
        if let jsonLines {
            await jsonLines.stop()
            let counters = jsonLines.counters
            summary = Summary(
                events: counters.lines - counters.invalidLines,
                invalid: counters.invalidLines,
                connections: counters.connections
            )
        } else if let beats {
            await beats.stop()
            let counters = beats.counters
            summary = Summary(
                events: counters.events - counters.invalidEvents,
                invalid: counters.invalidEvents,
                connections: counters.connections
            )
        } else {
            summary = Summary(events: 0, invalid: 0, connections: 0)
        }
        let unit = options.wireProtocol == .beats ? "invalid event(s)" : "invalid line(s)"
        options.errors.write(
            Array(
                "justlog: received \(summary.events) event(s), \(summary.invalid) \(unit), on \(summary.connections) connection(s)\n"
                    .utf8
            )
        )
        return summary
    }

    private func validatedTLS() throws -> JSONLinesReceiver.TLS? {
        switch (options.tlsCertificateFile, options.tlsKeyFile) {
        case (nil, nil): return nil
        case (let certificate?, let key?):
            for (flag, path) in [("--tls-cert", certificate), ("--tls-key", key)]
            where !FileManager.default.isReadableFile(atPath: path) {
                throw ToolError.usage("\(flag) \(path): no such readable file; give the path of a PEM file")
            }
            return .init(certificateFile: certificate, keyFile: key)
        case (_?, nil): throw ToolError.usage("--tls-cert needs --tls-key: give the certificate's PEM private key too")
        case (nil, _?): throw ToolError.usage("--tls-key needs --tls-cert: give the PEM certificate too")
        }
    }
}

// MARK: - Printing

extension ReceiveTool {
    /// Turns received lines into output; called on the receiver's event loops.
    final class Printer: Sendable {
        let options: Options
        let sink: AppendingFile?
        let renderer: EventLineRenderer
        /// Keeps lines of different connections whole and in one order; counts lines the file refused.
        let lock = LockedValue(0)

        init(options: Options, sink: AppendingFile?) {
            self.options = options
            self.sink = sink
            let colors =
                switch options.colors {
                case .always: true
                case .never: false
                case .automatic: options.output.isTerminal
                }
            self.renderer = EventLineRenderer(colors: colors, timeZone: options.timeZone)
        }

        @Sendable func handle(_ line: JSONLinesReceiver.Line) {
            switch line.parsed {
            case .failure(let error):
                let text =
                    "connection \(line.connection) line \(line.lineNumber): \(TerminalSafeText.escape(error.message))\n"
                lock.withLock { _ in options.errors.write(Array(text.utf8)) }
            case .success(let value):
                if let sink {
                    lock.withLock { failures in
                        guard let reason = sink.append(line.raw + [UInt8(ascii: "\n")]) else { return }
                        failures += 1
                        if failures == 1 {
                            options.errors.write(
                                Array("justlog: can't append to \(sink.path): \(reason); lines are being lost\n".utf8)
                            )
                        }
                    }
                    return
                }
                let text: String
                if options.pretty {
                    text = render(value)
                } else {
                    let raw = String(decoding: line.raw, as: UTF8.self)
                    text = (options.output.isTerminal ? TerminalSafeText.escape(raw) : raw) + "\n"
                }
                lock.withLock { _ in options.output.write(Array(text.utf8)) }
            }
        }

        /// Prints or appends a group of Beats events; returns how many are handled (all, or none when the
        /// file refused them: those are not acknowledged and the client resends them).
        @Sendable func handle(_ events: [BeatsReceiver.Event]) -> Int {
            if let sink {
                var bytes: [UInt8] = []
                for event in events {
                    switch event.parsed {
                    case .failure(let error):
                        let text =
                            "connection \(event.connection) event \(event.sequence): \(TerminalSafeText.escape(error.message))\n"
                        lock.withLock { _ in options.errors.write(Array(text.utf8)) }
                    case .success:
                        bytes += event.raw
                        bytes.append(UInt8(ascii: "\n"))
                    }
                }
                return lock.withLock { failures in
                    guard !bytes.isEmpty, let reason = sink.append(bytes) else { return events.count }
                    failures += 1
                    if failures == 1 {
                        options.errors.write(
                            Array(
                                "justlog: can't append to \(sink.path): \(reason); events are not acknowledged and will be resent\n"
                                    .utf8
                            )
                        )
                    }
                    return 0
                }
            }
            for event in events {
                handle(
                    JSONLinesReceiver.Line(
                        connection: event.connection,
                        lineNumber: Int(event.sequence),
                        raw: event.raw,
                        parsed: event.parsed
                    )
                )
            }
            return events.count
        }

        /// One readable line for a flattened event (or any JSON value).
        func render(_ value: LogValue) -> String {
            guard case .object(let object) = value else {
                return renderer.render(time: nil, level: nil, levelName: "json", message: value.text, fields: [])
            }
            var time: LogTimestamp?
            if case .string(let stamp)? = object[FlattenedFormat.timestampKey] {
                time = LogTimestamp(parsing: Substring(stamp))
            }
            var level: LogLevel?
            var levelName: String?
            if case .string(let type)? = object[UserInfoKey.logType] {
                level = LogLevel(name: type)
                levelName = type
            }
            let message = object[AggregatedFormat.messageKey]?.text ?? ""
            let fields = EventLineRenderer.fields(
                of: object,
                excluding: [FlattenedFormat.timestampKey, AggregatedFormat.messageKey, UserInfoKey.logType]
            )
            return renderer.render(time: time, level: level, levelName: levelName, message: message, fields: fields)
        }
    }
}

/// A file opened for appending (created owner-only), written with `write(2)`. Appends and the close take one
/// lock: a line a receiver delivers late (a connection's unfinished last line, ended as the receiver stops) finds
/// the file closed instead of writing to whatever reused its number, and two connections' lines never interleave.
final class AppendingFile: Sendable {
    let path: String
    /// The descriptor, -1 once closed.
    private let fd: LockedValue<Int32>

    init(path: String) throws {
        self.path = path
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ToolError(
                "can't open \(path) for appending: \(String(cString: strerror(errno))); give a writable file path"
            )
        }
        self.fd = LockedValue(fd)
    }

    /// Appends `bytes`; returns why it failed (such as a full disk, or the file closed already), or `nil`.
    @discardableResult
    func append(_ bytes: [UInt8]) -> String? {
        fd.withLock { fd in
            guard fd >= 0 else { return "the file was closed (the receiver stopped)" }
            return bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    if written <= 0 { return written < 0 ? String(cString: strerror(errno)) : "nothing written" }
                    offset += written
                }
                return nil
            }
        }
    }

    func close() {
        fd.withLock { fd in
            guard fd >= 0 else { return }
            _ = Foundation.close(fd)
            fd = -1
        }
    }
}
