/// An error from JustLog: what went wrong, where, and what caused it.
///
/// Like `FileSystemError` in SwiftNIO, the code is an opaque struct rather than a public enum, so new
/// codes can be added without breaking anyone's `switch`.
///
/// ```swift
/// do { _ = try FileDestination(configuration: .init(url: url)) }
/// catch let error as JustLogError where error.code == .fileSystem { print(error) }
/// ```
public struct JustLogError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A file or folder could not be created, opened or written.
        public static let fileSystem = Code("fileSystem")
        /// The pipeline was shut down, or did not finish in time.
        public static let shutdown = Code("shutdown")
        /// A flush did not complete before its deadline.
        public static let timeout = Code("timeout")
        /// A configuration value is invalid.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A line could not be read back.
        public static let malformedInput = Code("malformedInput")
        /// The collector could not be reached or refused the connection.
        public static let connection = Code("connection")
    }

    public var code: Code
    /// A sentence that says what is wrong and, where possible, what to do.
    public var message: String
    /// The underlying error's description, if any.
    public var cause: String?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause.map { String(describing: $0) }
    }

    public var description: String {
        if let cause { return "\(message) (\(cause))" }
        return message
    }
}
