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
    /// The text of the latest time written: `yyyy-MM-dd?HH:mm:ss.SSS` and the form's suffix; the milliseconds are
    /// replaced for each time of the same second.
    private var text: [UInt8] = []

    package init(_ form: Form) {
        self.form = form
    }

    package mutating func write(_ timestamp: LogTimestamp, into out: inout [UInt8]) {
        update(timestamp)
        out.append(contentsOf: text)
    }

    /// Writes the time: at most ``maximumCount`` bytes.
    package mutating func write(_ timestamp: LogTimestamp, into out: inout RawWriter) {
        update(timestamp)
        out.bytes(text)
    }

    /// The most bytes a time takes: `yyyy-MM-ddTHH:mm:ss.SSSZ` (the year always takes four digits).
    static let maximumCount = 24

    private mutating func update(_ timestamp: LogTimestamp) {
        let (seconds, millis) = timestamp.split
        if seconds != second {
            let text =
                switch form {
                case .rfc3339: timestamp.rfc3339
                case .line(let zone): timestamp.localLineTime(in: zone)
                }
            self.text = Array(text.utf8)
            second = seconds
        }
        text.withUnsafeMutableBufferPointer { text in
            text[20] = UInt8(ascii: "0") + UInt8(millis / 100)
            text[21] = UInt8(ascii: "0") + UInt8(millis / 10 % 10)
            text[22] = UInt8(ascii: "0") + UInt8(millis % 10)
        }
    }
}
