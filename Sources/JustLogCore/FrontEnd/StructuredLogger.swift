/// The front end of JustLog's core: an ordinary value you construct, pass around and inject.
///
/// It captures each call cheaply — level check first, then the message, `userInfo`, error, call site and one
/// clock reading — and hands the event to its ``LogPipeline``, which formats and writes in the background.
/// Copies share the pipeline.
///
/// ```swift
/// import JustLogCore
///
/// let file = try FileDestination(configuration: .init(url: URL(fileURLWithPath: "/tmp/app.log")))
/// let logger = StructuredLogger(configuration: .init(
///     destinations: [.init(ConsoleDestination(), minimumLevel: .warning), .init(file, minimumLevel: .debug)],
///     defaultUserInfo: ["app": "billing", "environment": "production"]
/// ))
/// logger.info("a nice information", userInfo: ["some key": "some extra info"])
/// try await logger.flush()
/// ```
public struct StructuredLogger: Sendable {
    /// Everything a logger needs, as one immutable value.
    public struct Configuration: Sendable {
        /// Where records go, each with its own minimum level.
        public var destinations: [LogPipeline.Route]
        /// Added to every record's `userInfo`; a call's own key replaces a default key.
        public var defaultUserInfo: [String: LogValue]
        /// `app_version`, `version` and `device` of the metadata. Default: ``RuntimeInfo/current``.
        public var runtime: RuntimeInfo
        /// Applied to every record before any destination sees it (redaction). Default: none.
        public var sanitizer: Sanitizer?
        /// Queue limits and exit flushing.
        public var pipeline: LogPipeline.Configuration
        /// Where JustLog reports its own problems. Default: standard error.
        public var diagnostics: DiagnosticSink
        /// What one call may carry (depth, keys, elements, bytes, message length); past it the record keeps
        /// what fits and says what was cut. Default: `CaptureLimits()`, each limit as documented there.
        public var captureLimits: CaptureLimits
        /// What ``Sensitive`` values (and swift-log values marked sensitive) become. Default:
        /// ``PrivacyPolicy/default`` — redacted in release builds.
        public var privacy: PrivacyPolicy
        /// The clock of log calls. Default: the system clock.
        public var clock: @Sendable () -> LogTimestamp
        /// Where every event goes before its log call returns, so that the background destinations (console,
        /// file) lose nothing if the program is killed; written after a restart (see ``EventJournal``).
        /// Default `nil`: what is queued is lost on a crash. A journal serves one logger: see
        /// ``LogPipeline/Setup/journal``.
        public var journal: EventJournal?

        public init(
            destinations: [LogPipeline.Route],
            defaultUserInfo: [String: LogValue] = [:],
            runtime: RuntimeInfo = .current,
            sanitizer: Sanitizer? = nil,
            pipeline: LogPipeline.Configuration = .init(),
            diagnostics: DiagnosticSink = .standardError,
            captureLimits: CaptureLimits = CaptureLimits(),
            privacy: PrivacyPolicy = .default,
            clock: @escaping @Sendable () -> LogTimestamp = { LogTimestamp.now() },
            journal: EventJournal? = nil
        ) {
            self.journal = journal
            self.destinations = destinations
            self.defaultUserInfo = defaultUserInfo
            self.runtime = runtime
            self.sanitizer = sanitizer
            self.pipeline = pipeline
            self.diagnostics = diagnostics
            self.captureLimits = captureLimits
            self.privacy = privacy
            self.clock = clock
        }

        /// The pipeline setup this configuration describes.
        public var setup: LogPipeline.Setup {
            LogPipeline.Setup(
                routes: destinations,
                builder: RecordBuilder(defaultUserInfo: defaultUserInfo, runtime: runtime, limits: captureLimits),
                sanitizer: sanitizer,
                configuration: pipeline,
                captureLimits: captureLimits,
                privacy: privacy,
                journal: journal
            )
        }
    }

    /// The pipeline this logger submits to.
    public let pipeline: LogPipeline

    /// What one call may carry; applied to `userInfo` on the caller's thread (the pipeline's, current).
    public var captureLimits: CaptureLimits { pipeline.intake.captureLimits }

    /// A logger with its own pipeline, started now.
    public init(configuration: Configuration) {
        self.pipeline = LogPipeline(
            setup: configuration.setup,
            diagnostics: configuration.diagnostics,
            now: configuration.clock
        )
    }

    /// A logger over an existing pipeline: several front ends — this one, a swift-log handler — can share one,
    /// and each follows it when it is reconfigured.
    public init(pipeline: LogPipeline) {
        self.pipeline = pipeline
    }

    // MARK: - Logging

    /// Logs `message` at `level`. The message, the error and `userInfo` are not evaluated (the dictionary literal is
    /// never built) when no destination takes `level`.
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
        guard pipeline.admits(level) else { return }
        pipeline.submitCall(
            level,
            message(),
            error: error(),
            userInfo: userInfo(),
            callSite: CallSite(file: file, function: function, line: line)
        )
    }

    /// Logs at ``LogLevel/verbose`` 📣.
    @inlinable
    public func verbose(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.verbose, message(), error: error(), userInfo: userInfo(), file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/debug`` 📝.
    @inlinable
    public func debug(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.debug, message(), error: error(), userInfo: userInfo(), file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/info`` ℹ️.
    @inlinable
    public func info(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.info, message(), error: error(), userInfo: userInfo(), file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/warning`` ⚠️.
    @inlinable
    public func warning(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.warning, message(), error: error(), userInfo: userInfo(), file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/error`` ☠️.
    @inlinable
    public func error(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        userInfo: @autoclosure () -> [String: Any]? = nil,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.error, message(), error: error(), userInfo: userInfo(), file: file, function: function, line: line)
    }

    // MARK: - Flushing

    /// Returns once every event logged before the call has been handed to every destination.
    public func flush() async throws {
        try await pipeline.flush()
    }

    /// Calls `completion` once every event logged before the call has been handed over, or with the error
    /// that says why not.
    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        pipeline.flush(completion: completion)
    }
}
