public import Foundation

/// Writes every record, in the aggregated form, one line per event, to a log file that rotates by size
/// (SPEC §2, §5):
///
/// ```text
/// 2016-12-24 12:31:02.734  📣 VERBOSE: {"message":"not so important","metadata":{…},"userInfo":{…}}
/// ```
///
/// - New files are created with owner-only permissions (0600), their folder (0700) if missing.
/// - Past ``Configuration/maximumFileSize`` the file is renamed `name.1` (older ones shift to `name.2`, …)
///   and a new one is started; ``Configuration/retainedFileCount`` rotated files are kept. A rename the file
///   system refuses (a folder the program may not write in) is reported once and tried again after
///   ``Configuration/retryInterval``; meanwhile the file stays open and grows past its limit (what a file-size limit
///   then refuses is counted lost).
/// - A path that names a pipe, a device, or a process's stream itself or through links (`app.log -> /dev/stdout`,
///   `/dev/fd/N`, `/proc/…/fd/N`), is written to and never rotated. A write to a pipe waits while its reader does
///   not read, as a console's does; a FIFO no process reads is an error at creation (so is a socket: use the
///   console destination); a pipe whose reader went away fails writes with `EPIPE` (counted as lost) rather than
///   killing the program with `SIGPIPE` — for the writing thread only, nothing process-wide changes.
/// - If the file or its folder is deleted or moved away, the next batch recreates it (a folder that only can't be
///   searched any more leaves the open file as it is). A file emptied under it (logrotate's `copytruncate`) is
///   rotated when it is full again.
/// - A rotating file the system lets grow no further than its maximum — the process's file-size limit
///   (`ulimit -f`), the largest file a file system holds (`EFBIG`) — rotates there (said once on the diagnostics
///   sink); an event whose line alone is larger is lost alone, counted, and rotates nothing away.
/// - An I/O error (a full disk, a read-only folder) never reaches the caller: it is
///   reported once on the diagnostics sink and the events whose line is not in the file are counted as lost,
///   exactly. Writing is tried again at the first batch after ``Configuration/retryInterval`` (and at every
///   flush); when it works, a warning line in the file says how many were lost. A flush that still cannot
///   write reports the count on the diagnostics sink instead.
/// - The file only holds whole lines: a write that a full disk or the size limit stops part-way is cut back
///   to its last whole line. A file-size limit (`ulimit -f`) fails writes with `EFBIG` rather than killing the
///   program with `SIGXFSZ` (see `FileSizeLimit`).
///
/// ```swift
/// let file = try FileDestination(configuration: .init(url: folder.appendingPathComponent("app.log")))
/// ```
public final class FileDestination: LogDestination, PlainBatchWriting {
    /// Where and how a file destination writes.
    public struct Configuration: Sendable {
        /// The log file.
        public var url: URL
        /// The size past which the file rotates: at least 1 byte. Default 10 MiB.
        public var maximumFileSize: Int { didSet { maximumFileSize = Self.fileSize(maximumFileSize) } }
        /// How many rotated files (`name.1` … `name.N`) are kept: 0 to ``maximumRetainedFileCount``. Default 5.
        public var retainedFileCount: Int {
            didSet { retainedFileCount = Self.retainedCount(retainedFileCount) }
        }
        /// The most rotated files kept (a rotation renames each one: `Int.max` of them would never end).
        public static let maximumRetainedFileCount = 10_000

        /// `bytes` as ``maximumFileSize`` takes it.
        private static func fileSize(_ bytes: Int) -> Int { max(1, bytes) }
        /// `count` as ``retainedFileCount`` takes it.
        private static func retainedCount(_ count: Int) -> Int { min(max(0, count), maximumRetainedFileCount) }
        /// The zone of line times. Default: the local zone.
        public var timeZone: TimeZone
        /// After a write failed, how long (in seconds) batches are counted as lost without trying to write, so
        /// that a full disk costs no system call per event. A flush always tries. Default 1 s.
        public var retryInterval: Double
        /// Called each time the file tries to rotate (tests count the tries).
        package var onRotating: (@Sendable () -> Void)?

        public init(
            url: URL,
            maximumFileSize: Int = 10 << 20,
            retainedFileCount: Int = 5,
            timeZone: TimeZone = .current,
            retryInterval: Double = 1
        ) {
            self.url = url
            self.maximumFileSize = Self.fileSize(maximumFileSize)
            self.retainedFileCount = Self.retainedCount(retainedFileCount)
            self.timeZone = timeZone
            self.retryInterval = max(0, retryInterval)
        }
    }

    public let configuration: Configuration
    private let format: LineFormat
    private let state: LockedValue<State>

    /// The file, and the buffers and caches of formatting its lines (reused batch after batch).
    private struct State {
        var writer: RotatingFileWriter
        var lines = LineBatch()
        /// The line time, and `metadata.timestamp`.
        var lineTimes: TimeTextCache
        var timestamps = TimeTextCache(.rfc3339)
        /// The aggregated lines of the call sites met last (see ``LineTemplates``).
        var templates = LineTemplates.aggregated()
        /// A line of the general path, before it joins ``lines``.
        var line: [UInt8] = []

        /// Writes the lines formatted into ``lines`` (the caller emptied it first), then lets go of a buffer that a
        /// large batch grew.
        mutating func writeLines(now: Duration, lossLine: (UInt64, String) -> [UInt8]) {
            writer.append(lines: lines, now: now, lossLine: lossLine)
            if lines.bytes.capacity > 1 << 20 { lines = LineBatch() }
            if line.capacity > 1 << 20 { line = [] }
        }
    }
    /// Time since the destination was created, on its clock (for the retry interval).
    private let elapsed: @Sendable () -> Duration

    /// Opens (or creates) the log file; throws if that is impossible now.
    public convenience init(configuration: Configuration, diagnostics: DiagnosticSink = .standardError) throws {
        try self.init(configuration: configuration, diagnostics: diagnostics, clock: ContinuousClock())
    }

    /// Opens (or creates) the log file, timing retries after a failed write on `clock`; throws if opening is
    /// impossible now.
    public convenience init<C: Clock>(
        configuration: Configuration,
        diagnostics: DiagnosticSink = .standardError,
        clock: C
    ) throws where C.Duration == Duration {
        try self.init(configuration: configuration, diagnostics: diagnostics, clock: clock, closer: .background)
    }

    /// The same, closing the files rotation deletes with `closer` (see ``DescriptorCloser``).
    package init<C: Clock>(
        configuration: Configuration,
        diagnostics: DiagnosticSink,
        clock: C,
        closer: DescriptorCloser
    ) throws where C.Duration == Duration {
        self.configuration = configuration
        self.format = LineFormat(timeZone: configuration.timeZone, colors: false)
        let start = clock.now
        self.elapsed = { start.duration(to: clock.now) }
        var writer = RotatingFileWriter(
            path: configuration.url.path,
            maximumFileSize: configuration.maximumFileSize,
            retainedFileCount: configuration.retainedFileCount,
            retryInterval: .milliseconds(Int64(max(0, min(configuration.retryInterval, 86_400)) * 1000)),
            diagnostics: diagnostics,
            closer: closer,
            onRotating: configuration.onRotating
        )
        // Past a file-size limit (`ulimit -f`) a write must fail with EFBIG, handled like a full disk, rather
        // than kill the program with SIGXFSZ.
        FileSizeLimit.failWritesInsteadOfKilling()
        try writer.open()
        self.state = LockedValue(State(writer: writer, lineTimes: TimeTextCache(.line(configuration.timeZone))))
    }

    public func write(_ batch: LogBatch) {
        let now = elapsed()
        state.withLock { state in
            state.lines.removeAll()
            for record in batch.records {
                state.line.removeAll(keepingCapacity: true)
                format.writeFileLine(for: record, into: &state.line)
                state.lines.bytes.append(state.line)
                state.lines.endLine()
            }
            state.writeLines(now: now, lossLine: lossLine)
        }
    }

    /// Writes plain journal records straight from their bytes: the same lines as ``write(_:)`` writes for their
    /// records.
    package func write(_ batch: PlainBatch) {
        let now = elapsed()
        state.withLock { state in
            state.lines.removeAll()
            for index in 0..<batch.count where batch.isIncluded(index) {
                batch.writeFileLine(
                    at: index,
                    lineFormat: format,
                    lineTimes: &state.lineTimes,
                    times: &state.timestamps,
                    templates: &state.templates,
                    into: &state.lines.bytes
                )
                state.lines.endLine()
            }
            state.writeLines(now: now, lossLine: lossLine)
        }
    }

    /// Lines go to the kernel with write(2) as they are written; nothing is buffered here. After a failed write,
    /// a flush tries again to write the line that reports the loss, and otherwise reports the count on the
    /// diagnostics sink; it completes with the error that is still in the way.
    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        let now = elapsed()
        let error = state.withLock { state in
            state.writer.retryAfterFailure(now: now, lossLine: lossLine)
        }
        completion(error)
    }

    public func shutdown() {
        state.withLock { $0.writer.finish() }
    }

    /// Writes what the journal recovered after the newest of them this file holds (its last lines are read; a torn
    /// last line is cut away first and written again whole): every event once, in order.
    public func journalRecovery() -> JournalRecovery {
        .replay(afterNewestOf: state.withLock { $0.writer.newestEventIDs(upTo: Self.recoveryLines) })
    }

    /// How many of its last lines the file reads for ``journalRecovery()``.
    static let recoveryLines = 1_024

    private func lossLine(_ lost: UInt64, _ error: String) -> [UInt8] {
        let event = LogEvent.report(
            "JustLog could not write \(lost) event(s) to this file: \(error)",
            userInfo: ["lost_events": .uint(lost)]
        )
        let record = RecordBuilder(runtime: .current).record(for: event, sequence: 0)
        var line: [UInt8] = []
        format.writeFileLine(for: record, into: &line)
        return line
    }
}
