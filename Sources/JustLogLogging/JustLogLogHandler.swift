public import JustLogCore
public import Logging

/// A swift-log `LogHandler` that routes `Logging.Logger` events — from your code, SwiftNIO, Vapor,
/// Hummingbird, AsyncHTTPClient — into a JustLog pipeline, so they reach the same console, files and Logstash.
///
/// A value type, as swift-log requires: changing the level or metadata of one `Logging.Logger` never changes
/// another's. Levels map as `trace` → verbose, `debug` → debug, `info`/`notice` → info, `warning` → warning,
/// `error`/`critical` → error. Metadata (the handler's, the provider's, then the call's) becomes `userInfo`;
/// the logger's label and the event's source go into the record's metadata as `logger` and `source`; the
/// swift-log level name is kept as `swift_log_level` when it is `notice` or `critical`.
///
/// A value marked sensitive (SLG-0004 metadata attributes: `"\(email, sensitivity: .sensitive)"`, see
/// ``Sensitivity``) is replaced as the pipeline's ``PrivacyPolicy`` says, here, before any destination sees it.
///
/// With the documented `Logger.shared`, one line (the `JustLog` product) — the handler follows the shared logger
/// through every `setup()`:
///
/// ```swift
/// import JustLog
/// import JustLogLogging
/// import Logging
///
/// LoggingSystem.bootstrap(JustLogLogHandler.shared)
/// JustLog.Logger.shared.setup()
/// let log = Logging.Logger(label: "com.example.billing")
/// log.info("charged", metadata: ["amount": "12.50", "card": "\(cardNumber, sensitivity: .sensitive)"])
/// ```
///
/// Over any pipeline (the `JustLogCore` product, no networking linked):
/// `LoggingSystem.bootstrap { JustLogLogHandler(label: $0, pipeline: logger.pipeline) }`.
public struct JustLogLogHandler: LogHandler {
    /// The logger's label (`logger` in the record's metadata).
    public let label: String
    /// The pipeline events go to.
    public let pipeline: LogPipeline
    public var logLevel: Logging.Logger.Level
    public var metadata: Logging.Logger.Metadata = [:]
    public var metadataProvider: Logging.Logger.MetadataProvider?

    public init(
        label: String,
        pipeline: LogPipeline,
        logLevel: Logging.Logger.Level = .info,
        metadataProvider: Logging.Logger.MetadataProvider? = nil
    ) {
        self.label = label
        self.pipeline = pipeline
        self.logLevel = logLevel
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logging.Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: Logging.LogEvent) {
        let level = Self.level(event.level)
        guard pipeline.admits(level) else { return }
        let intake = pipeline.intake
        guard level >= intake.minimumLevel else { return }
        var userInfo: [String: LogValue] = [:]
        func merge(_ metadata: Logging.Logger.Metadata) {
            for (key, value) in metadata { userInfo[key] = Self.value(value, privacy: intake.privacy) }
        }
        merge(metadata)
        if let provided = metadataProvider?.get() { merge(provided) }
        if let call = event.metadata { merge(call) }
        // Within the pipeline's capture limits, as a facade call's userInfo (see `ValueCapture`).
        var capture = ValueCapture(limits: intake.captureLimits, privacy: intake.privacy)
        var captured = userInfo.isEmpty ? userInfo : capture.fields(logValues: userInfo)
        if event.level == .notice || event.level == .critical {
            // After the limits, which could cut it (review, helper-64). A metadata key of the same name is kept,
            // renamed (`swift_log_level_userInfo`), as in every record.
            KeyCollision.insert(
                "swift_log_level",
                .string(event.level.rawValue),
                into: &captured,
                displacedSuffix: "userInfo"
            )
        }
        pipeline.submit(
            JustLogCore.LogEvent(
                level: level,
                message: event.message.description,
                error: event.error,
                userInfo: captured,
                metadata: ["logger": .string(label), "source": .string(event.source)],
                callSite: CallSite(file: event.file, function: event.function, line: event.line),
                timestamp: pipeline.now(),
                truncations: capture.truncations
            )
        )
    }

    /// The JustLog level of a swift-log level.
    public static func level(_ level: Logging.Logger.Level) -> LogLevel {
        switch level {
        case .trace: .verbose
        case .debug: .debug
        case .info, .notice: .info
        case .warning: .warning
        case .error, .critical: .error
        }
    }

    /// A swift-log metadata value as a JSON value: strings stay strings, `stringConvertible` values are
    /// described, arrays and dictionaries nest; a value marked ``Sensitivity/sensitive`` is replaced as `privacy`
    /// says.
    public static func value(_ value: Logging.Logger.MetadataValue, privacy: PrivacyPolicy) -> LogValue {
        switch value {
        case .string(let string):
            return .string(string)
        case .stringConvertible(let convertible):
            let text = LogValue.string(convertible.description)
            return value.attributes[Sensitivity.self] == .sensitive ? privacy.apply(to: text) : text
        case .array(let array):
            return .array(array.map { Self.value($0, privacy: privacy) })
        case .dictionary(let dictionary):
            return .object(dictionary.mapValues { Self.value($0, privacy: privacy) })
        }
    }
}

/// A swift-log metadata attribute (SLG-0004) saying whether a value may be logged in clear. JustLog replaces a
/// `.sensitive` value as its ``PrivacyPolicy`` says before any destination sees it; other handlers ignore it.
///
/// ```swift
/// log.info("signed in", metadata: ["email": "\(user.email, sensitivity: .sensitive)"])
/// ```
public enum Sensitivity: Int64, Logging.Logger.MetadataValueAttributes.Attribute, Sendable {
    /// Must not reach a destination in clear.
    case sensitive = 1
    /// May be logged as it is (the same as no attribute).
    case `public` = 2
}

extension Logging.Logger.MetadataValue.StringInterpolation {
    /// `"\(value, sensitivity: .sensitive)"`: the value, marked with its ``Sensitivity``.
    public mutating func appendInterpolation<T: CustomStringConvertible & Sendable>(
        _ value: T,
        sensitivity: Sensitivity
    ) {
        appendInterpolation(value, attributes: { $0[Sensitivity.self] = sensitivity })
    }
}
