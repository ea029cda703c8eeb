package import Foundation

/// Writes times as ``LogTimestamp/rfc3339`` or ``LogTimestamp/localLineTime(in:)`` do, working the calendar out
/// once per second: the text up to the second is kept, the milliseconds are written per event. A second of
/// logging holds thousands of events; each costs a copy instead of a calendar computation and a `String`.
package struct TimeTextCache {
    package enum Form {
        /// `2016-12-24T12:31:38.475Z`
        case rfc3339
        /// `2016-12-24 12:31:02.734`, in the zone.
        case line(TimeZone)
    }

    let form: Form
    private var second = Int64.min
    /// The millisecond of the latest time written: events logged together share it, and its text.
    private var millisecond = Int64.min
    /// The text of the latest time written: `yyyy-MM-dd?HH:mm:ss.SSS` and the form's suffix; the milliseconds are
    /// replaced for each time of the same second.
    private var text: [UInt8] = []
    /// The same text as words, for ``write(_:into:)-(_,RawWriter)``: its first 16 bytes, and its last 8 (which
    /// overlap them), each written with one store. Kept when the text takes 17 to 24 bytes, as every time does.
    private var head: (UInt64, UInt64) = (0, 0)
    private var tail: UInt64 = 0
    /// Where the milliseconds' three digits lie in ``tail``, in bits.
    private var millisShift: UInt64 = 0
    private var inWords = false

    package init(_ form: Form) {
        self.form = form
    }

    package mutating func write(_ timestamp: LogTimestamp, into out: inout [UInt8]) {
        _ = out.write(atMost: Self.maximumCount) { writer in
            write(timestamp, into: &writer)
            return true
        }
    }

    /// Writes the time: at most ``maximumCount`` bytes.
    package mutating func write(_ timestamp: LogTimestamp, into out: inout RawWriter) {
        update(timestamp)
        if inWords {
            let start = out.count
            out.word(head.0)
            out.word(head.1)
            out.overwriteWord(tail, endingAt: start + text.count)
        } else {
            out.bytes(text)
        }
    }

    /// The most bytes a time takes: `yyyy-MM-ddTHH:mm:ss.SSSZ` (the year always takes four digits).
    static let maximumCount = 24

    private mutating func update(_ timestamp: LogTimestamp) {
        let millisecond = timestamp.millisecondsSinceEpoch
        if millisecond == self.millisecond { return }
        self.millisecond = millisecond
        let (seconds, millis) = timestamp.split
        if seconds != second {
            let text =
                switch form {
                case .rfc3339: timestamp.rfc3339
                case .line(let zone): timestamp.localLineTime(in: zone)
                }
            self.text = Array(text.utf8)
            second = seconds
            let count = self.text.count
            inWords = count > 16 && count <= Self.maximumCount
            if inWords {
                self.text.withUnsafeBytes { bytes in
                    head = (
                        UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self)),
                        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                    )
                    tail = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
                }
                millisShift = UInt64(20 - (count - 8)) * 8
            }
        }
        let digits = (
            UInt8(ascii: "0") + UInt8(millis / 100), UInt8(ascii: "0") + UInt8(millis / 10 % 10),
            UInt8(ascii: "0") + UInt8(millis % 10)
        )
        if inWords {
            let packed = UInt64(digits.0) | UInt64(digits.1) << 8 | UInt64(digits.2) << 16
            tail = tail & ~(0xFF_FFFF << millisShift) | packed << millisShift
        } else {
            text.withUnsafeMutableBufferPointer { text in
                text[20] = digits.0
                text[21] = digits.1
                text[22] = digits.2
            }
        }
    }
}
