/// The one error type of JustLog: an opaque ``code`` to compare against, a ``message`` that says what went wrong
/// and what to do, and the underlying error as a real value in ``cause``.
///
/// Like `FileSystemError` in SwiftNIO, the code is an opaque struct rather than a public enum, so new codes can
/// be added without breaking anyone's `switch`. Every module (the core, the Logstash destination, the facade)
/// throws this type; `LogstashError` is another name for it.
///
/// ```swift
/// do { _ = try FileDestination(configuration: .init(url: url)) }
/// catch let error as JustLogError where error.code == .fileSystem { print(error, error.cause as Any) }
/// ```
public struct JustLogError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A file or folder could not be created, opened or written.
        public static let fileSystem = Code("fileSystem")
        /// The logger, the pipeline or the client was shut down (or not started), or did not finish in time.
        public static let shutdown = Code("shutdown")
        /// An operation (a flush, a connection's close) did not complete before its deadline.
        public static let timeout = Code("timeout")
        /// A call that waits for the pipeline's thread — a flush with a timeout, a shutdown, a reconfiguration — was
        /// made on that thread (by a destination, or an action run in log order): it would wait for itself.
        public static let pipelineThread = Code("pipelineThread")
        /// A reconfiguration changed nothing: an earlier one still waits for the destinations it replaced to close
        /// (one of them blocks in its final flush or its `shutdown`).
        public static let reconfigurationPending = Code("reconfigurationPending")
        /// A configuration value can't be used (the message says which).
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A line or a frame could not be read back.
        public static let malformedInput = Code("malformedInput")
        /// The collector could not be reached or refused the connection.
        public static let connection = Code("connection")
        /// A record is larger than the spool's `maxRecordBytes`; it was not spooled.
        public static let recordTooLarge = Code("recordTooLarge")
        /// A record is empty (collectors drop empty lines); it was not spooled.
        public static let emptyRecord = Code("emptyRecord")
        /// A record holds a newline (a collector would take it for two lines); it was not spooled.
        public static let multilineRecord = Code("multilineRecord")
        /// The spool's folder or files can't be created, mapped or written.
        public static let spoolUnavailable = Code("spoolUnavailable")
        /// The spool was closed.
        public static let spoolClosed = Code("spoolClosed")
        /// Connecting (resolving, TCP connect, TLS handshake) failed.
        public static let connectFailed = Code("connectFailed")
        /// The server's certificate was refused (untrusted, wrong host, expired, pin mismatch).
        public static let certificateRejected = Code("certificateRejected")
        /// An established connection failed or was closed by the peer.
        public static let connectionLost = Code("connectionLost")
        /// The TLS settings can't be used (unreadable CA file, malformed pin).
        public static let invalidTLSConfiguration = Code("invalidTLSConfiguration")
        /// A peer sent bytes that are not a valid frame of the protocol in use (Lumberjack v2: an unknown
        /// version or type, a frame past the size limit, corrupt zlib data, an ACK beyond the window).
        public static let malformedFrame = Code("malformedFrame")

        /// The same as ``shutdown`` (the Logstash client's earlier name).
        @available(*, deprecated, renamed: "shutdown")
        public static let shutDown = shutdown
        /// The same as ``timeout`` (the Logstash client's earlier name).
        @available(*, deprecated, renamed: "timeout")
        public static let timedOut = timeout
    }

    public var code: Code
    /// A sentence that says what is wrong and, where possible, what to do.
    public var message: String
    /// The underlying error, if any: the system call's, the TLS library's, the file system's.
    public var cause: (any Error)?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public init(code: Code, message: String, cause: (any Error)? = nil) {
        self.init(code, message, cause: cause)
    }

    /// An error whose cause is known only as text (a C library's `strerror`, a peer's answer).
    public init(code: Code, message: String, cause: String) {
        self.init(code, message, cause: DescribedCause(description: cause))
    }

    public var description: String {
        if let cause { return "\(message) (\(cause))" }
        return message
    }

    /// Equal when code, message and the cause's description are.
    public static func == (lhs: JustLogError, rhs: JustLogError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.cause.map { "\($0)" } == rhs.cause.map { "\($0)" }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(cause.map { "\($0)" })
    }
}

/// A cause known only by its description.
public struct DescribedCause: Error, Hashable, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}
