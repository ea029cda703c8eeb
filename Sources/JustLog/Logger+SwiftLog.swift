public import JustLogLogging
public import Logging

extension JustLogLogHandler {
    /// A handler over `Logger.shared`'s pipeline, which keeps its identity across `setup()`: the one-line
    /// bootstrap that sends every `Logging.Logger` — yours, SwiftNIO's, Vapor's — to the documented logger's
    /// console, file and Logstash destinations.
    ///
    /// ```swift
    /// LoggingSystem.bootstrap(JustLogLogHandler.shared)
    /// LoggingSystem.bootstrap(JustLogLogHandler.shared, metadataProvider: .init { ["request_id": "\(currentRequestID)"] })
    /// ```
    public static func shared(label: String) -> JustLogLogHandler {
        JustLogLogHandler(label: label, pipeline: Logger.shared.pipeline)
    }

    /// ``shared(label:)`` with a swift-log metadata provider (the second form of `LoggingSystem.bootstrap`).
    public static func shared(label: String, metadataProvider: Logging.Logger.MetadataProvider?) -> JustLogLogHandler {
        JustLogLogHandler(label: label, pipeline: Logger.shared.pipeline, metadataProvider: metadataProvider)
    }
}
