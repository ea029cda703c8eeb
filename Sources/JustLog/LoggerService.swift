public import ServiceLifecycle

/// Runs a ``Logger`` as a swift-service-lifecycle `Service`: on graceful shutdown it flushes everything
/// queued (console, file, and what the Logstash collector can take within `shutdownTimeout`) and closes
/// every destination. What could not be sent stays in the spool for the next run.
///
/// Put it **first** in the group: a `ServiceGroup` shuts its services down in reverse order, so the logger then
/// closes last, after what the other services log while they shut down.
///
/// ```swift
/// let logger = Logger(configuration: configuration)
/// let group = ServiceGroup(services: [LoggerService(logger: logger), server], logger: swiftLogLogger)
/// try await group.run()
/// ```
///
/// `run()` throws the shutdown's error (events the collector did not take in time — they stay spooled — or a
/// destination that failed to close), after every other service has stopped.
public struct LoggerService: Service {
    public let logger: Logger
    /// The longest the final flush may go without progress (while the destinations keep writing, it waits).
    /// Default 10 s. Closing the Logstash connection afterwards can
    /// take up to that client's own `shutdownTimeout` (default 5 s) more; what is not sent stays spooled.
    public var shutdownTimeout: Double

    public init(logger: Logger, shutdownTimeout: Double = 10) {
        self.logger = logger
        self.shutdownTimeout = shutdownTimeout
    }

    public func run() async throws {
        try? await gracefulShutdown()
        if let error = await logger.shutdown(timeout: shutdownTimeout) {
            throw error
        }
    }
}
