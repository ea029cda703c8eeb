public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The wall-clock time of a log call, in nanoseconds since 1970-01-01T00:00:00Z.
///
/// Captured on the caller's thread with one `clock_gettime` (no `Date` formatting on the hot path);
/// formatted later, on the pipeline's thread.
///
/// ```swift
/// let t = LogTimestamp(nanosecondsSinceEpoch: 1_482_582_698_475_000_000)
/// t.rfc3339        // "2016-12-24T12:31:38.475Z"
/// ```
public struct LogTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanosecondsSinceEpoch: Int64

    @inlinable
    public init(nanosecondsSinceEpoch: Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    /// The time of `date`, rounded to the microsecond (a `Date` holds no more: `…38.475` must not print as `.474`).
    /// A timestamp holds the years 1677 to 2262: a date outside (`Date.distantFuture`, an infinite interval) is
    /// clamped to the nearest one it holds, and a NaN one is the epoch — never a trap (see ``init(exactly:)``).
    public init(_ date: Date) {
        self = LogTimestamp(exactly: date) ?? LogTimestamp(nanosecondsSinceEpoch: Self.clampedNanoseconds(date))
    }

    /// The time of `date` as ``init(_:)`` takes it, or `nil` if a timestamp can't hold it (before 1677, after 2262,
    /// infinite or NaN).
    public init?(exactly date: Date) {
        let interval = date.timeIntervalSince1970
        guard Self.representableSeconds.contains(interval) else { return nil }
        let seconds = interval.rounded(.down)
        let micros = ((interval - seconds) * 1_000_000).rounded()
        self.nanosecondsSinceEpoch = Int64(seconds) * 1_000_000_000 + Int64(micros) * 1_000
    }

    /// Seconds since the epoch whose whole nanoseconds an `Int64` holds (with a second to spare at each end).
    private static let representableSeconds = -9_223_372_035.0...9_223_372_035.0

    /// `date`'s nanoseconds, clamped to what a timestamp holds; 0 for NaN.
    private static func clampedNanoseconds(_ date: Date) -> Int64 {
        let interval = date.timeIntervalSince1970
        if interval.isNaN { return 0 }
        return interval < 0
            ? Int64(representableSeconds.lowerBound) * 1_000_000_000
            : Int64(representableSeconds.upperBound) * 1_000_000_000
    }

    /// The current wall-clock time.
    @inlinable
    public static func now() -> LogTimestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return LogTimestamp(nanosecondsSinceEpoch: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }

    public static func < (lhs: LogTimestamp, rhs: LogTimestamp) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }

    public var date: Date { Date(timeIntervalSince1970: Double(nanosecondsSinceEpoch) / 1_000_000_000) }

    public var description: String { rfc3339 }

    /// RFC 3339 in UTC with milliseconds: `2016-12-24T12:31:38.475Z` (the `@timestamp` of Logstash).
    public var rfc3339: String {
        let (seconds, millis) = split
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return Self.format(parts, millis: millis, dateTimeSeparator: "T", suffix: "Z")
    }

    /// Local time as console and file lines show it: `2016-12-24 12:31:02.734`.
    public var localLineTime: String {
        localLineTime(in: .current)
    }

    /// The line time in a given time zone (tests pin one, lines use the local zone).
    public func localLineTime(in zone: TimeZone) -> String {
        let (seconds, millis) = split
        // The offset of the whole second (zones change at whole seconds): `date` rounds to the next second in its
        // last 128 ns, which would show the new offset a few nanoseconds early.
        let offset = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds)))
        var time = time_t(seconds + Int64(offset))
        var parts = tm()
        gmtime_r(&time, &parts)
        return Self.format(parts, millis: millis, dateTimeSeparator: " ", suffix: "")
    }

    /// Parses what ``rfc3339`` and ``localLineTime`` write (the latter in `zone`).
    public init?(parsing text: Substring, zone: TimeZone? = nil) {
        let bytes = Array(text.utf8)
        guard bytes.count >= 23, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: " "), bytes[19] == UInt8(ascii: ".")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let digit = Int(bytes[index]) - 48
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            let millis = number(20..<23)
        else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let utcSeconds = Int64(timegm(&parts))
        let isUTC = bytes.count > 23 && bytes[23] == UInt8(ascii: "Z")
        var seconds = utcSeconds
        if !isUTC {
            let zone = zone ?? .current
            seconds -= Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(utcSeconds))))
        }
        // Four digits of years reach past what a timestamp holds (2262): not a time (review, helper-48: a trap, from
        // a line a collector sent `justlog receive`).
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow, nanoseconds <= .max - 999_000_000 else { return nil }
        self.nanosecondsSinceEpoch = nanoseconds + Int64(millis) * 1_000_000
    }

    /// Whole milliseconds since the epoch, rounded down.
    var millisecondsSinceEpoch: Int64 { nanosecondsSinceEpoch.floorDiv(1_000_000) }

    /// Whole seconds since the epoch (rounded down) and the milliseconds past them.
    var split: (seconds: Int64, millis: Int) {
        let seconds = nanosecondsSinceEpoch.floorDiv(1_000_000_000)
        // Wrapping: within a second of `Int64.min`, `seconds * 10^9` is below it; the difference is not.
        let millis = Int((nanosecondsSinceEpoch &- seconds &* 1_000_000_000) / 1_000_000)
        return (seconds, millis)
    }

    private static func format(_ parts: tm, millis: Int, dateTimeSeparator: Character, suffix: String) -> String {
        // One buffer, one String: `yyyy-MM-dd?HH:mm:ss.SSS` plus the suffix.
        var bytes = [UInt8](repeating: 0, count: 23)
        func put(_ value: Int, at offset: Int, width: Int) {
            var value = value
            for position in stride(from: offset + width - 1, through: offset, by: -1) {
                bytes[position] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
        }
        put(Int(parts.tm_year) + 1900, at: 0, width: 4)
        bytes[4] = UInt8(ascii: "-")
        put(Int(parts.tm_mon) + 1, at: 5, width: 2)
        bytes[7] = UInt8(ascii: "-")
        put(Int(parts.tm_mday), at: 8, width: 2)
        bytes[10] = dateTimeSeparator.asciiValue ?? UInt8(ascii: " ")
        put(Int(parts.tm_hour), at: 11, width: 2)
        bytes[13] = UInt8(ascii: ":")
        put(Int(parts.tm_min), at: 14, width: 2)
        bytes[16] = UInt8(ascii: ":")
        put(Int(parts.tm_sec), at: 17, width: 2)
        bytes[19] = UInt8(ascii: ".")
        put(millis, at: 20, width: 3)
        bytes.append(contentsOf: suffix.utf8)
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Int64 {
    fileprivate func floorDiv(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor < 0) ? quotient - 1 : quotient
    }
}
