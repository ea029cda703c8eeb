public import JustLogCore

/// The Logstash client's and spool's errors are JustLog's one error type: compare ``JustLogError/code``
/// (`.recordTooLarge`, `.spoolUnavailable`, `.connectFailed`, `.certificateRejected`, …), read the message, and
/// find the underlying error in ``JustLogError/cause``.
///
/// ```swift
/// do {
///     try spool.append(bytes)
/// } catch let error as LogstashError where error.code == .recordTooLarge {
///     // truncate the record and append it again
/// }
/// ```
public typealias LogstashError = JustLogError
