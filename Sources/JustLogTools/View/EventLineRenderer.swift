import Foundation
import JustLogCore

/// Renders one event as one readable, terminal-safe line, for `justlog receive` and `justlog view`:
///
/// ```text
/// 2016-12-24 12:31:02.734  ⚠️ WARNING  payment service is slow  latency_ms=2350.5 threshold_ms=1000
/// ```
///
/// The time (local), the level's emoji and label padded so messages line up, the message, then the other
/// fields as `key=value` in byte order (a key or string with spaces, quotes or `=` is quoted; arrays and objects are compact JSON). Every part goes
/// through ``TerminalSafeText``, so a field can neither forge a line nor recolor the terminal. Colors
/// (ANSI) only when asked for: the caller decides, normally "on a terminal".
struct EventLineRenderer: Sendable {
    var colors: Bool
    var timeZone: TimeZone = .current

    /// The width of the longest label (`VERBOSE`, `WARNING`).
    static let labelWidth = 7

    func render(
        time: LogTimestamp?,
        level: LogLevel?,
        levelName: String? = nil,
        message: String,
        fields: [(key: String, value: LogValue)]
    ) -> String {
        var line = ""
        line.reserveCapacity(128 + message.utf8.count)
        let timeText = time.map { $0.localLineTime(in: timeZone) } ?? String(repeating: "-", count: 23)
        line += dim(timeText)
        line += "  "
        if let level {
            line += level.emoji + " " + paint(Self.pad(level.label), LineFormat.color(level))
        } else {
            let name = TerminalSafeText.escape((levelName ?? "-").uppercased())
            line += "• " + Self.pad(name)
        }
        line += "  "
        line += TerminalSafeText.escape(message)
        for (key, value) in fields {
            line += " "
            line += dim(Self.quoteIfNeeded(TerminalSafeText.escape(key)) + "=")
            // Strings are quoted when needed; numbers, arrays and objects are compact JSON already.
            if case .string(let text) = value {
                line += Self.quoteIfNeeded(TerminalSafeText.escape(text))
            } else {
                line += TerminalSafeText.escape(value.text)
            }
        }
        line += "\n"
        return line
    }

    /// Sorted `key=value` fields of an object, without the given keys.
    static func fields(
        of object: [String: LogValue],
        excluding excluded: Set<String>
    ) -> [(key: String, value: LogValue)] {
        object.filter { !excluded.contains($0.key) }
            .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            .map { (key: $0.key, value: $0.value) }
    }

    static func pad(_ label: String) -> String {
        label.count >= labelWidth ? label : label + String(repeating: " ", count: labelWidth - label.count)
    }

    static func quoteIfNeeded(_ text: String) -> String {
        if text.isEmpty { return "\"\"" }
        guard text.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            + "\""
    }

    private func paint(_ text: String, _ code: String) -> String {
        colors ? code + text + "\u{1B}[0m" : text
    }

    private func dim(_ text: String) -> String {
        paint(text, "\u{1B}[2m")
    }
}
