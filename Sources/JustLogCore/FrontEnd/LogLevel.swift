/// The five levels of the JustLog documentation, in increasing order of severity.
///
/// ```swift
/// let level: LogLevel = .warning
/// assert(level > .info)
/// print(level.emoji, level.label)   // ⚠️ WARNING
/// ```
public enum LogLevel: Int, CaseIterable, Comparable, Hashable, Sendable, CustomStringConvertible {
    case verbose = 0
    case debug = 1
    case info = 2
    case warning = 3
    case error = 4

    @inlinable
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The emoji shown in console and file lines: 📣 📝 ℹ️ ⚠️ ☠️.
    public var emoji: String {
        switch self {
        case .verbose: "📣"
        case .debug: "📝"
        case .info: "ℹ️"
        case .warning: "⚠️"
        case .error: "☠️"
        }
    }

    /// The upper-case name shown in console and file lines, such as `WARNING`.
    public var label: String {
        switch self {
        case .verbose: "VERBOSE"
        case .debug: "DEBUG"
        case .info: "INFO"
        case .warning: "WARNING"
        case .error: "ERROR"
        }
    }

    /// The `log_type` value of the aggregated and flattened forms, such as `warning`.
    public var logType: String {
        switch self {
        case .verbose: "verbose"
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }

    public var description: String { logType }

    /// Parses a `log_type` or label (`"warning"`, `"WARNING"`, `"warn"`), for configuration and command lines.
    public init?(name: String) {
        switch name.lowercased() {
        case "verbose", "trace": self = .verbose
        case "debug": self = .debug
        case "info", "notice": self = .info
        case "warning", "warn": self = .warning
        case "error", "critical", "fatal": self = .error
        default: return nil
        }
    }
}
