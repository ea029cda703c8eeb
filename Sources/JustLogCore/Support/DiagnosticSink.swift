/// Where JustLog reports its own problems (a file it cannot write, a full queue): standard error by
/// default, a capture in tests. Reports are one line each, prefixed `JustLog:`.
///
/// A sink may be called while a pipeline's lock is held: it must not log through JustLog itself (write to
/// a file descriptor, a capture, another logging system).
///
/// ```swift
/// let lines = LockedValue<[String]>([])
/// let sink = DiagnosticSink { line in lines.withLock { $0.append(line) } }
/// ```
public struct DiagnosticSink: Sendable {
    private let write: @Sendable (String) -> Void
    private let reported = LockedValue<Set<String>>([])

    public init(_ write: @escaping @Sendable (String) -> Void) {
        self.write = write
    }

    /// This sink, with once-only reports of its own: what one owner (a pipeline, a journal, a file, a Logstash
    /// destination) reports once is still said by the next one that writes to the same sink — every logger's
    /// default is ``standardError``.
    package func withOwnReports() -> DiagnosticSink {
        DiagnosticSink(write)
    }

    /// Writes to the process's standard error, unbuffered.
    public static let standardError = DiagnosticSink { line in
        writeAll(2, Array((line.hasSuffix("\n") ? line : line + "\n").utf8))
    }

    /// Reports `message` every time.
    public func report(_ message: String) {
        write("JustLog: " + message)
    }

    /// Reports `message` only the first time `key` is seen by this sink (and its copies, but not those made by
    /// ``withOwnReports()``), so that a failing disk prints one line, not one per event. `message` is built only
    /// then.
    public func reportOnce(key: String, _ message: @autoclosure () -> String) {
        let first = reported.withLock { $0.insert(key).inserted }
        if first { report(message()) }
    }

    /// Forgets `key`, so that the next failure of that kind is reported again (after a recovery).
    public func reset(key: String) {
        _ = reported.withLock { $0.remove(key) }
    }
}
