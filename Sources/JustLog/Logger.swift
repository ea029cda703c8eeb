public import Foundation
public import JustLogCore
public import JustLogLogstash

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
/// ``setup()`` again applies the current settings in place, in log order. Every call goes through one
/// `StructuredLogger` (``structured``) over one `LogPipeline` that keeps its identity for the logger's life:
/// no facade lock is held while logging, and the pipeline's clock stamps every event.
public final class Logger: @unchecked Sendable {
    /// The instance of the documented API.
    public static let shared = Logger()

    /// Events kept before ``setup()``; past it the oldest are dropped and counted.
    public static let pendingCapacity = 10_000

    /// While ``setup()`` replaces running destinations, events logged meanwhile wait in the queue; when it is
    /// full, a caller waits (back-pressure) for the new destinations, at most this many seconds before its event
    /// is dropped and counted. Also how long ``setup()`` waits, without progress, for the previous destinations to
    /// close.
    public static let reconfigurationWait = LogPipeline.reconfigurationPatience

    /// The one front end every call of this logger goes through; its pipeline keeps its identity across
    /// ``setup()``, so a swift-log handler or another `StructuredLogger` attached to it keeps working.
    public let structured: StructuredLogger

    private let settings = LockedValue(Settings())
    let switches = DestinationSwitches()

    /// Whether the logger was made from a ``Configuration``: ``setup()``, which applies the property-style settings,
    /// changes nothing on it.
    private let madeFromConfiguration: Bool

    /// A logger set up with the property-style settings and ``setup()``; until then it keeps what is logged.
    public init() {
        madeFromConfiguration = false
        structured = StructuredLogger(pipeline: LogPipeline(holdingUpTo: Self.pendingCapacity))
    }

    /// A logger running now with `configuration`.
    public init(configuration: Configuration) {
        settings.withLock {
            $0.diagnostics = configuration.diagnostics
            $0.privacy = configuration.privacy
            $0.captureLimits = configuration.captureLimits
        }
        switches.built(configuration)
        madeFromConfiguration = true
        structured = StructuredLogger(
            pipeline: LogPipeline(
                setup: Self.setup(configuration, switches: switches),
                diagnostics: configuration.diagnostics,
                now: configuration.clock
            )
        )
    }

    // MARK: - Property-style settings (applied by setup())

    private func read<T>(_ keyPath: KeyPath<Settings, T>) -> T { settings.withLock { $0[keyPath: keyPath] } }
    private func write<T>(_ keyPath: WritableKeyPath<Settings, T>, _ value: T) {
        settings.withLock { $0[keyPath: keyPath] = value }
    }

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

    /// The size in bytes past which the log file rotates (renamed `name.1`, older ones shifted). Default 10 MiB;
    /// at least 1.
    public var logFileMaximumSize: Int {
        get { read(\.file.maximumFileSize) }
        set { write(\.file.maximumFileSize, newValue) }  // `FileDestination.Configuration` clamps it
    }

    /// How many rotated log files (`name.1` … `name.N`) are kept. Default 5; 0 keeps only the current file; at
    /// most 10,000 (`FileDestination.Configuration.maximumRetainedFileCount`).
    public var logFileRetainedCount: Int {
        get { read(\.file.retainedFileCount) }
        set { write(\.file.retainedFileCount, newValue) }  // `FileDestination.Configuration` clamps it
    }

    /// The lowest level the console shows. Default `LogLevel/verbose` (every level).
    public var consoleMinimumLevel: LogLevel {
        get { read(\.consoleMinimumLevel) }
        set { write(\.consoleMinimumLevel, newValue) }
    }

    /// The lowest level written to the file. Default `LogLevel/verbose` (every level).
    public var fileMinimumLevel: LogLevel {
        get { read(\.fileMinimumLevel) }
        set { write(\.fileMinimumLevel, newValue) }
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

    /// The lowest level sent to Logstash. Default `LogLevel/verbose` (every level).
    public var logstashMinimumLevel: LogLevel {
        get { read(\.logstash.minimumLevel) }
        set { write(\.logstash.minimumLevel, newValue) }
    }

    /// The protocol spoken to the collector: `.jsonLines` (the default; Logstash's `tcp` input with the `json_lines`
    /// codec, syslog-ng, rsyslog) or `.beats` (Logstash's `beats` input, which acknowledges what it queued: no
    /// resend window, no duplicates after a collector restart — recommended for Logstash).
    public var logstashTransport: LogstashClient.Transport {
        get { read(\.logstash.transport) }
        set { write(\.logstash.transport, newValue) }
    }

    /// Base64 SHA-256 digests of the collector's SubjectPublicKeyInfo; when set, the collector's key must match one
    /// (on top of the certificate's verification; with `allowUntrustedServer`, instead of it). Default `[]`.
    public var logstashPinnedPublicKeys: [String] {
        get { read(\.logstash.pinnedPublicKeys) }
        set { write(\.logstash.pinnedPublicKeys, newValue) }
    }

    /// The Logstash spool's folder. Default `nil`: `<log folder>/<log file name>.spool/`, next to the log file.
    public var logstashSpoolFolder: URL? {
        get { read(\.logstash.spoolFolder) }
        set { write(\.logstash.spoolFolder, newValue) }
    }

    /// Your own destinations, beside the console, file and Logstash ones, each with its minimum level. Default `[]`.
    /// They are yours, given once: a ``setup()`` leaves open those it installs again, shuts down (before it builds the
    /// new destinations) those no longer in this list, and `shutdown(timeout:)` shuts down the rest. One shut down
    /// that way can't be given again (a `LogstashDestination` whose spool is closed loses what it is given): give a
    /// new instance.
    public var additionalDestinations: [LogPipeline.Route] {
        get { read(\.extraDestinations) }
        set { write(\.extraDestinations, newValue) }
    }

    /// Queue limits and exit flushing (`LogPipeline.Configuration`). Default `.init()`.
    public var pipelineConfiguration: LogPipeline.Configuration {
        get { read(\.pipeline) }
        set { write(\.pipeline, newValue) }
    }

    /// The Logstash spool's size cap in bytes; past it the oldest events are dropped and counted. Default 64 MiB.
    public var logstashSpoolCapacity: Int {
        get { read(\.logstash.spoolCapacity) }
        set { write(\.logstash.spoolCapacity, newValue) }
    }

    /// Added to the `userInfo` of every log; a per-call key replaces a default key. A `Sensitive` value here
    /// is replaced as ``privacy`` says at the moment this property is set.
    public var defaultUserInfo: [String: Any]? {
        get { read(\.defaultUserInfo).mapValues(\.plainValue) }
        set {
            settings.withLock { settings in
                var capture = ValueCapture(limits: settings.captureLimits, privacy: settings.privacy)
                settings.defaultUserInfo = newValue.map { capture.fields($0, at: "defaultUserInfo") } ?? [:]
            }
        }
    }

    /// What `Sensitive` values and swift-log values marked sensitive become. Default
    /// `PrivacyPolicy/default`: `"<private>"` in release builds, in clear in debug builds. Applies to calls from the
    /// moment it is set, before ``setup()`` too — not only from the next ``setup()``, as the other settings.
    public var privacy: PrivacyPolicy {
        get { read(\.privacy) }
        set {
            settings.withLock { settings in
                settings.privacy = newValue
                pipeline.capture(privacy: newValue)
            }
        }
    }

    /// What one call may carry (depth, keys, elements, bytes, message length). Default `CaptureLimits()`. Applies
    /// to calls from the moment it is set, like ``privacy``.
    public var captureLimits: CaptureLimits {
        get { read(\.captureLimits) }
        set {
            settings.withLock { settings in
                settings.captureLimits = newValue
                pipeline.capture(limits: newValue)
            }
        }
    }

    /// Applied to every record before any destination (redaction). Default `nil`.
    public var sanitizer: Sanitizer? {
        get { read(\.sanitizer) }
        set { write(\.sanitizer, newValue) }
    }

    /// Whether the console destination writes; can change at any time. Default `true`. A destination that was
    /// off when ``setup()`` ran is not created: call ``setup()`` again after turning it on (said on standard error
    /// when it is turned on without).
    public var enableConsoleLogging: Bool {
        get { switches.console.isOn }
        set { set(switches.console, newValue, named: "enableConsoleLogging", destination: "console") }
    }

    /// Whether the file destination writes; can change at any time. Default `true`. A destination that was
    /// off when ``setup()`` ran is not created: call ``setup()`` again after turning it on (said on standard error
    /// when it is turned on without).
    public var enableFileLogging: Bool {
        get { switches.file.isOn }
        set { set(switches.file, newValue, named: "enableFileLogging", destination: "file") }
    }

    /// Whether the Logstash destination sends; can change at any time. Default `true`. A destination that was
    /// off (or had no ``logstashHost``) when ``setup()`` ran is not created: call ``setup()`` again after turning it
    /// on (said on standard error when it is turned on without).
    public var enableLogstashLogging: Bool {
        get { switches.logstash.isOn }
        set { set(switches.logstash, newValue, named: "enableLogstashLogging", destination: "Logstash") }
    }

    /// Sets `destinationSwitch`; turned on while the last ``setup()`` built no such destination, says that it takes
    /// a ``setup()`` — the switch alone changed nothing, and `forceSend` reported success with nothing sent (review,
    /// helper-62).
    private func set(_ destinationSwitch: DestinationSwitch, _ isOn: Bool, named name: String, destination: String) {
        destinationSwitch.set(isOn, pipeline: pipeline)
        guard isOn, destinationSwitch.builtAtSetup.current == false else { return }
        read(\.diagnostics).report(
            madeFromConfiguration
                ? "\(name) = true: there is no \(destination) destination — this logger's Configuration has none"
                : "\(name) = true: there is no \(destination) destination — setup() ran without one; call setup() again to start it"
        )
    }

    /// Where this logger reports its own problems (tests read them). Default: standard error.
    package var diagnostics: DiagnosticSink {
        get { read(\.diagnostics) }
        set { write(\.diagnostics, newValue) }
    }

    /// Builds the destinations from the current settings and delivers what was logged before. Calling it
    /// again applies changed settings **in place, in log order**: events logged before the call reach the
    /// previous destinations, which are then flushed and closed (releasing the file and the spool folder; your
    /// ``additionalDestinations`` still in the settings stay open);
    /// events logged after it reach the new ones; nothing is lost or written twice, and front ends attached to
    /// ``pipeline`` (the swift-log handler) keep working. Problems (a file that cannot be opened) are reported on
    /// standard error, never thrown. A previous destination that blocks in its final flush or its `shutdown` (one
    /// of your own) is waited for ``reconfigurationWait`` without progress, not for ever: the new destinations are
    /// then set up all the same and take over, in log order, once it lets go; a further `setup()` meanwhile waits
    /// as long and then changes nothing. Both are said on standard error. On a logger made from a ``Configuration``
    /// it changes nothing (and says so): its settings are that configuration.
    public func setup() {
        // Its settings are its configuration, which the property-style settings don't hold: a `setup()` replaced its
        // destinations, journal and sanitizer with the defaults (review, helper-62).
        guard !madeFromConfiguration else {
            read(\.diagnostics).report(
                "setup() applies the property-style settings, which a Logger made from a Configuration does not use: nothing changed"
            )
            return
        }
        // The settings are read once this setup's turn has come: of two `setup()` calls at once, the later to run
        // reads (and installs) the newer settings.
        var read: Configuration?
        let outcome = pipeline.reconfigureReportingOutcome(
            keepingOpen: {
                let configuration = settings.withLock { $0.configuration(switches: switches) }
                read = configuration
                // Your own destinations stay open while they stay in the settings (given once, not made anew).
                return configuration.extraDestinations.map(\.destination)
            },
            {
                var configuration = read ?? settings.withLock { $0.configuration(switches: switches) }
                // Read again now, after the wait for the old destinations: set meanwhile, they are this setup's — the
                // intake is installed with them (review, helper-65).
                settings.withLock {
                    configuration.privacy = $0.privacy
                    configuration.captureLimits = $0.captureLimits
                }
                return Self.setup(configuration, switches: switches)
            }
        )
        let configuration = read ?? settings.withLock { $0.configuration(switches: switches) }
        if case .installed = outcome {
            switches.built(configuration)
            // A `privacy` or `captureLimits` set while this setup waited for the old destinations was published, then
            // overwritten by the intake built from the settings read before (review, helper-64): published again.
            settings.withLock { pipeline.capture(privacy: $0.privacy, limits: $0.captureLimits) }
        }
        switch outcome {
        case .refused(let failure):
            configuration.diagnostics.report("setup(): nothing changed: \(failure.message)")
        case .installed(oldDestinationsFailure: let failure?):
            configuration.diagnostics.report("setup(): the previous destinations did not close cleanly: \(failure)")
        case .installed(oldDestinationsFailure: nil):
            break
        }
    }

    // MARK: - Logging

    /// Logs `message` at `level`, with an optional error and `userInfo`.
    @inlinable
    public func log(
        _ level: LogLevel,
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        structured.log(
            level,
            message(),
            error: error(),
            userInfo: userInfo(),
            file: file,
            function: function,
            line: line
        )
    }

    /// Logs at `LogLevel/verbose` 📣.
    @inlinable
    public func verbose(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        structured.log(
            .verbose,
            message(),
            error: error(),
            userInfo: userInfo(),
            file: file,
            function: function,
            line: line
        )
    }

    /// Logs at `LogLevel/debug` 📝.
    @inlinable
    public func debug(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        structured.log(
            .debug,
            message(),
            error: error(),
            userInfo: userInfo(),
            file: file,
            function: function,
            line: line
        )
    }

    /// Logs at `LogLevel/info` ℹ️.
    @inlinable
    public func info(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        structured.log(
            .info,
            message(),
            error: error(),
            userInfo: userInfo(),
            file: file,
            function: function,
            line: line
        )
    }

    /// Logs at `LogLevel/warning` ⚠️.
    @inlinable
    public func warning(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        structured.log(
            .warning,
            message(),
            error: error(),
            userInfo: userInfo(),
            file: file,
            function: function,
            line: line
        )
    }

    /// Logs at `LogLevel/error` ☠️.
    @inlinable
    public func error(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        structured.log(
            .error,
            message(),
            error: error(),
            userInfo: userInfo(),
            file: file,
            function: function,
            line: line
        )
    }

    // MARK: - Sending

    /// Dispatches now; `completion` runs once everything logged before the call — including what an earlier run
    /// left in the spool — has been handed over, or with an error that says why not (before ``setup()``: that
    /// the logger is not set up).
    ///
    /// `completion` runs on a Dispatch queue of its own — never on the thread that finished the flush, so that it may
    /// call `exit`, or wait for another `forceSend` — except an answer given at once (not set up, shut down), which
    /// comes on the caller's thread before `forceSend` returns.
    ///
    /// In async code, wait with ``flush()``. `forceSend` has no `async` twin: one made the documented
    /// `Logger.shared.forceSend()` fail to compile inside any async function (Swift picks the async overload there,
    /// and asks for `try await`) — SwiftUI's `.task`, a server's handlers, an `async` `main`.
    public func forceSend(_ completion: @escaping @Sendable ((any Error)?) -> Void = { _ in }) {
        structured.flush(completion: completion)
    }

    /// ``forceSend(_:)`` for async code (the top level of `main.swift` included): returns once everything logged
    /// before the call has been handed over (including what an earlier run left in the spool), or throws why not.
    public func flush() async throws {
        try await structured.flush()
    }

    /// Flushes (waiting while the destinations make progress, until they make none for `timeout` seconds) and
    /// closes every destination. Later logs are dropped and counted. Called by a destination (on the pipeline's own
    /// thread), it can't wait: it returns `JustLogError.Code.pipelineThread` at once, and the destinations are
    /// closed once what is queued is written.
    @discardableResult
    public func shutdown(timeout: TimeInterval = 5) -> (any Error)? {
        pipeline.shutdown(timeout: timeout)
    }

    /// ``shutdown(timeout:)`` for async code: waits on a thread of its own, not on a thread of the concurrency pool
    /// or Dispatch's shared threads.
    @discardableResult
    public func shutdown(timeout: TimeInterval = 5) async -> (any Error)? {
        await pipeline.shutdown(timeout: timeout)
    }

    /// The pipeline behind this logger, the same one for its whole life (``setup()`` reconfigures it in
    /// place): for statistics, flushing with a timeout, and other front ends such as the swift-log handler.
    public var pipeline: LogPipeline { structured.pipeline }
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
