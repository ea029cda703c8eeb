public import Foundation
public import JustLogCore

/// JustLog's logger: one call site, console, rotating files and Logstash.
///
/// Two ways to set it up. The documented, property-style way on the shared instance:
///
/// ```swift
/// let logger = Logger.shared
/// logger.logFilename = "justeat-demo.log"
/// logger.logstashHost = "my.logstash.endpoint.com"
/// logger.logstashPort = 3515
/// logger.defaultUserInfo = ["app": "my iOS App", "environment": "production"]
/// logger.setup()
/// Logger.shared.info("a nice information", userInfo: ["some key": "some extra info"])
/// ```
///
/// Or, for code and tests that should not share a global, an ordinary instance made from an immutable
/// ``Configuration`` (the property-style setup builds one of these at ``setup()``):
///
/// ```swift
/// let logger = Logger(configuration: .init(file: .init(url: URL(fileURLWithPath: "/var/log/app.log"))))
/// ```
///
/// Logging before ``setup()`` is kept (up to ``pendingCapacity`` events) and delivered when it runs; calling
/// ``setup()`` again flushes and closes the previous destinations, then applies the current settings.
public final class Logger: @unchecked Sendable {
    /// The instance of the documented API.
    public static let shared = Logger()

    /// Events kept before ``setup()``; past it the oldest are dropped and counted.
    public static let pendingCapacity = 10_000

    private let lock = ConditionLock()
    private var settings = Settings()
    private var phase: Phase = .pending(PendingEvents())
    let switches = DestinationSwitches()

    /// A logger set up with the property-style settings and ``setup()``.
    public init() {}

    /// A logger running now with `configuration`.
    public init(configuration: Configuration) {
        phase = .running(Self.start(configuration, switches: switches))
    }

    // MARK: - Property-style settings (applied by setup())

    private func read<T>(_ keyPath: KeyPath<Settings, T>) -> T { lock.withLock { settings[keyPath: keyPath] } }
    private func write<T>(_ keyPath: WritableKeyPath<Settings, T>, _ value: T) { lock.withLock { settings[keyPath: keyPath] = value } }

    /// The log file's name, in ``baseUrlForFileLogging``. Default `<program>.log`.
    public var logFilename: String? {
        get { read(\.logFilename) }
        set { write(\.logFilename, newValue) }
    }

    /// The folder of the log file. Default: a per-program folder under `$XDG_CACHE_HOME` or `~/.cache` on
    /// Linux, the caches directory on Apple platforms.
    public var baseUrlForFileLogging: URL {
        get { read(\.baseUrlForFileLogging) }
        set { write(\.baseUrlForFileLogging, newValue) }
    }

    /// The Logstash collector's host name or address. Empty (the default) means no Logstash destination.
    public var logstashHost: String {
        get { read(\.logstash.host) }
        set { write(\.logstash.host, newValue) }
    }

    /// The Logstash collector's port. Default 5000.
    public var logstashPort: UInt16 {
        get { read(\.logstash.port) }
        set { write(\.logstash.port, newValue) }
    }

    /// Seconds between batched dispatches to Logstash. Default 5.
    public var logstashTimeout: TimeInterval {
        get { read(\.logstash.sendInterval) }
        set { write(\.logstash.sendInterval, newValue) }
    }

    /// Prints connection activity (connect, TLS handshake, batch sent, error, reconnect) to the console;
    /// never the token. Default `false`.
    public var logLogstashSocketActivity: Bool {
        get { read(\.logstash.logActivity) }
        set { write(\.logstash.logActivity, newValue) }
    }

    /// Whether the connection to Logstash uses TLS. Default `true`; `false` is plain TCP.
    public var logstashUseTLS: Bool {
        get { read(\.logstash.useTLS) }
        set { write(\.logstash.useTLS, newValue) }
    }

    /// `true` accepts a collector certificate that does not verify — TLS *without* verification, with a
    /// warning printed once; never plain TCP. Default `false`.
    public var allowUntrustedServer: Bool {
        get { read(\.logstash.allowUntrustedServer) }
        set { write(\.logstash.allowUntrustedServer, newValue) }
    }

    /// The path of a PEM bundle of CA certificates to trust instead of the system roots. Default `nil`.
    public var logstashCAFile: String? {
        get { read(\.logstash.caFile) }
        set { write(\.logstash.caFile, newValue) }
    }

    /// A logz.io token, added as `"token"` to every remote event. Default `nil`.
    public var logzioToken: String? {
        get { read(\.logstash.token) }
        set { write(\.logstash.token, newValue) }
    }

    /// Added to the `userInfo` of every log; a per-call key replaces a default key.
    public var defaultUserInfo: [String: Any]? {
        get { read(\.defaultUserInfo).mapValues(\.plainValue) }
        set { write(\.defaultUserInfo, newValue.map(LogValue.fields) ?? [:]) }
    }

    /// Applied to every record before any destination (redaction). Default `nil`.
    public var sanitizer: Sanitizer? {
        get { read(\.sanitizer) }
        set { write(\.sanitizer, newValue) }
    }

    /// Whether the console destination writes; can change at any time. Default `true`.
    public var enableConsoleLogging: Bool {
        get { switches.console.isOn }
        set { switches.console.set(newValue, pipeline: pipeline) }
    }

    /// Whether the file destination writes; can change at any time. Default `true`. A destination that was
    /// off when ``setup()`` ran is not created: call ``setup()`` again after turning it on.
    public var enableFileLogging: Bool {
        get { switches.file.isOn }
        set { switches.file.set(newValue, pipeline: pipeline) }
    }

    /// Whether the Logstash destination sends; can change at any time. Default `true`.
    public var enableLogstashLogging: Bool {
        get { switches.logstash.isOn }
        set { switches.logstash.set(newValue, pipeline: pipeline) }
    }

    /// Builds the destinations from the current settings and delivers what was logged before. Calling it
    /// again applies changed settings: the previous destinations are flushed and closed first (releasing the
    /// spool folder), events logged meanwhile are kept and delivered in order. Problems (a file that cannot
    /// be opened) are reported on standard error, never thrown.
    public func setup() {
        let (configuration, previous) = lock.withLock { () -> (Configuration, Phase) in
            let previous = phase
            if case .running = previous { phase = .pending(PendingEvents(reconfiguring: true)) }
            return (settings.configuration(switches: switches), previous)
        }
        if case .running(let old) = previous {
            old.logger.pipeline.shutdown(timeout: configuration.pipeline.exitFlushTimeout)
        }
        let running = Self.start(configuration, switches: switches)
        lock.withLock {
            if case .pending(let pending) = phase {
                if pending.dropped > 0 {
                    running.logger.warning(
                        pending.reconfiguring
                            ? "JustLog dropped \(pending.dropped) event(s) logged while setup() ran (more than \(Self.pendingCapacity) waited longer than \(Self.reconfigurationWait) s)"
                            : "JustLog dropped \(pending.dropped) event(s) logged before setup() (more than \(Self.pendingCapacity))"
                    )
                }
                // Replayed under the lock, so no event logged now can overtake an older one.
                pending.forEach { running.logger.pipeline.submit($0) }
            }
            phase = .running(running)
            // Callers that waited for room while setup() ran go on.
            lock.broadcast()
        }
    }

    /// While ``setup()`` replaces running destinations, events logged meanwhile wait in memory; once
    /// ``pendingCapacity`` wait, a caller waits (back-pressure) for the new destinations, at most this many seconds
    /// before the oldest waiting event is dropped and counted.
    public static let reconfigurationWait = 30.0

    // MARK: - Logging

    /// Logs `message` at `level`, with an optional error and `userInfo`.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, error: (any Error)? = nil, userInfo: [String: Any]? = nil,
                    file: String = #fileID, function: String = #function, line: UInt = #line) {
        // The level check and the message (user code) run outside the lock; the event is then handed to
        // whatever the logger is at that moment — the pipeline, or the buffer while `setup()` runs.
        let minimum: LogLevel? = lock.withLock {
            if case .running(let running) = phase { return running.logger.pipeline.minimumLevel }
            return nil
        }
        if let minimum, level < minimum { return }
        let event = LogEvent(
            level: level, message: message(), error: error, capturing: userInfo,
            callSite: CallSite(file: file, function: function, line: line), timestamp: .now()
        )
        lock.withLock {
            waitWhileReconfiguringIsFull()
            switch phase {
            case .running(let running): running.logger.pipeline.submit(event)
            case .pending(let pending): pending.append(event)
            }
        }
    }

    /// During a repeated setup() the buffer fills only under heavy logging: waits (lock held) for the new
    /// destinations rather than push older events out, at most ``reconfigurationWait``. Before the first setup()
    /// nothing drains the buffer, so there is nothing to wait for. The clock is read only when waiting.
    private func waitWhileReconfiguringIsFull() {
        var deadline: ContinuousClock.Instant?
        while case .pending(let pending) = phase, pending.reconfiguring, pending.count >= Self.pendingCapacity {
            let end = deadline ?? ContinuousClock.now + .seconds(Self.reconfigurationWait)
            deadline = end
            let remaining = ContinuousClock.now.duration(to: end)
            guard remaining > .zero else { return }
            _ = lock.wait(seconds: Double(remaining.components.seconds) + Double(remaining.components.attoseconds) / 1e18)
        }
    }

    /// Logs at ``LogLevel/verbose`` 📣.
    public func verbose(_ message: @autoclosure () -> String, error: (any Error)? = nil, userInfo: [String: Any]? = nil,
                        file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(.verbose, message(), error: error, userInfo: userInfo, file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/debug`` 📝.
    public func debug(_ message: @autoclosure () -> String, error: (any Error)? = nil, userInfo: [String: Any]? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(.debug, message(), error: error, userInfo: userInfo, file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/info`` ℹ️.
    public func info(_ message: @autoclosure () -> String, error: (any Error)? = nil, userInfo: [String: Any]? = nil,
                     file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(.info, message(), error: error, userInfo: userInfo, file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/warning`` ⚠️.
    public func warning(_ message: @autoclosure () -> String, error: (any Error)? = nil, userInfo: [String: Any]? = nil,
                        file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(.warning, message(), error: error, userInfo: userInfo, file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/error`` ☠️.
    public func error(_ message: @autoclosure () -> String, error: (any Error)? = nil, userInfo: [String: Any]? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(.error, message(), error: error, userInfo: userInfo, file: file, function: function, line: line)
    }

    // MARK: - Sending

    /// Dispatches now; `completion` runs once everything logged before the call — including what an earlier run
    /// left in the spool — has been handed over, or with an error that says why not.
    public func forceSend(_ completion: @escaping @Sendable ((any Error)?) -> Void = { _ in }) {
        let current: Phase = lock.withLock { phase }
        switch current {
        case .running(let running):
            running.logger.flush(completion: completion)
        case .pending(let pending):
            completion(JustLogError(.invalidConfiguration, "the logger is not set up: call setup() first (\(pending.count) event(s) waiting)"))
        }
    }

    /// Dispatches now and returns once everything logged before the call has been handed over.
    public func forceSend() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            forceSend { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    /// Flushes (at most `timeout` seconds) and closes every destination. Later logs are dropped and counted.
    @discardableResult
    public func shutdown(timeout: TimeInterval = 5) -> (any Error)? {
        let current: Phase = lock.withLock { phase }
        guard case .running(let running) = current else { return nil }
        return running.logger.pipeline.shutdown(timeout: timeout)
    }

    /// ``shutdown(timeout:)`` for async code: waits on a dispatch queue, not on a concurrency-pool thread.
    @discardableResult
    public func shutdown(timeout: TimeInterval = 5) async -> (any Error)? {
        await offThePool { self.shutdown(timeout: timeout) as (any Error)? }
    }

    /// The pipeline behind this logger once set up (for statistics and the swift-log bridge).
    public var pipeline: LogPipeline? {
        let current: Phase = lock.withLock { phase }
        if case .running(let running) = current { return running.logger.pipeline }
        return nil
    }

    // MARK: - State

    private enum Phase {
        case pending(PendingEvents)
        case running(Running)
    }

    struct Running {
        var logger: StructuredLogger
    }

    /// Events logged before ``setup()`` (or while it runs): a ring of at most ``pendingCapacity``, oldest
    /// dropped and counted. A class, so that appending under the lock copies nothing.
    private final class PendingEvents {
        private var events: [LogEvent] = []
        private var start = 0
        private(set) var dropped = 0
        /// Whether a repeated setup() is replacing running destinations (callers then wait for room).
        let reconfiguring: Bool

        init(reconfiguring: Bool = false) {
            self.reconfiguring = reconfiguring
        }

        var count: Int { events.count - start }

        func append(_ event: LogEvent) {
            if count >= Logger.pendingCapacity {
                start += 1
                dropped += 1
                if start >= Logger.pendingCapacity {
                    events.removeFirst(start)
                    start = 0
                }
            }
            events.append(event)
        }

        func forEach(_ body: (LogEvent) -> Void) {
            events[start...].forEach(body)
        }
    }
}

extension LogValue {
    /// The value as plain Swift values (`String`, `Int64`, `[Any]`, `[String: Any]`, …), for the
    /// `[String: Any]` getters of the documented API.
    var plainValue: Any {
        switch self {
        case .string(let value): value
        case .int(let value): value
        case .uint(let value): value
        case .double(let value): value
        case .bool(let value): value
        case .null: NSNull()
        case .array(let values): values.map(\.plainValue)
        case .object(let values): values.mapValues(\.plainValue)
        }
    }
}
