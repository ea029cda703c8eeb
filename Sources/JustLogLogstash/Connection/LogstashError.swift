/// An error from the Logstash client or its spool: an opaque ``code`` to compare against, a message
/// that says what went wrong and what to do, and the underlying error when there is one.
///
/// ```swift
/// do {
///     try spool.append(bytes)
/// } catch let error as LogstashError where error.code == .recordTooLarge {
///     // truncate the record and append it again
/// }
/// ```
public struct LogstashError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added; don't switch exhaustively over them.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A record is larger than ``LogstashSpool/Configuration/maxRecordBytes``; it was not spooled.
        public static let recordTooLarge = Code("recordTooLarge")
        /// A record is empty (collectors drop empty lines); it was not spooled.
        public static let emptyRecord = Code("emptyRecord")
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
        /// A configuration value can't be used (the message says which).
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// The client was shut down (or not started) before the operation could complete.
        public static let shutDown = Code("shutDown")
        /// The operation did not complete in time.
        public static let timedOut = Code("timedOut")
        /// A peer sent bytes that are not a valid frame of the protocol in use (Lumberjack v2: an unknown
        /// version or type, a frame past the size limit, corrupt zlib data, an ACK beyond the window).
        public static let malformedFrame = Code("malformedFrame")

        public var description: String { name }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong and, where it helps, what to do about it.
    public var message: String
    /// The description of the underlying error, if any.
    public var cause: String?

    public init(code: Code, message: String, cause: String? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String {
        if let cause { return "\(message) (\(cause))" }
        return message
    }
}
