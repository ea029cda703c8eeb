/// Makes a message safe to print on one terminal line: it can neither forge a second log line nor send
/// escape sequences to the terminal.
///
/// Replaced with a visible escape: C0 controls (`\n`, `\r`, `\t` as such, others as `\u{1B}`), DEL, C1
/// controls (U+0080–U+009F, which some terminals treat as escapes), the line and paragraph separators
/// U+2028/U+2029, and the bidirectional overrides U+202A–U+202E and U+2066–U+2069 (which can make a line
/// read differently from what it says). Text with none of these is returned as it is, without copying.
///
/// ```swift
/// TerminalSafeText.escape("ok\n2016-12-24 12:00:00.000  ☠️ ERROR: forged")
/// // "ok\\n2016-12-24 12:00:00.000  ☠️ ERROR: forged"
/// ```
public enum TerminalSafeText {
    public static func escape(_ text: String) -> String {
        guard needsEscaping(text) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x00..<0x20, 0x7F, 0x80...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Whether `escape` would change `text`: one pass over the UTF-8 bytes.
    public static func needsEscaping(_ text: String) -> Bool {
        var utf8 = text.utf8.makeIterator()
        var previous: UInt8 = 0
        var beforePrevious: UInt8 = 0
        while let byte = utf8.next() {
            if byte < 0x20 || byte == 0x7F { return true }
            // C1 controls: C2 80…C2 9F.
            if previous == 0xC2, (0x80...0x9F).contains(byte) { return true }
            // U+2028…U+202E: E2 80 A8…AE; U+2066…U+2069: E2 81 A6…A9.
            if beforePrevious == 0xE2 {
                if previous == 0x80, (0xA8...0xAE).contains(byte) { return true }
                if previous == 0x81, (0xA6...0xA9).contains(byte) { return true }
            }
            beforePrevious = previous
            previous = byte
        }
        return false
    }
}
