/// A plain journal record read in place: where its fields lie in the bytes the journal handed over, nothing
/// copied, nothing decoded into `String`s or ``LogValue``s. Destinations that write straight from these bytes
/// (see ``PlainBatch``) format an event once, with no allocation per event.
///
/// *Plain* is what the fast lane writes for the common call (``JournalCodec/encodeCall(level:message:userInfo:callSite:timestamp:eventIDPrefix:limits:into:)``), and what the full
/// capture writes for the same call: a message within ``CaptureLimits/maximumMessageBytes``, at most
/// ``maximumMembers`` `userInfo` members whose values are strings, numbers, booleans or null, and no metadata,
/// no truncation, no error. Any other record is read by ``JournalCodec/decode(_:)`` into a ``LogEvent``.
struct JournalRecordView: Sendable {
    /// More members than this are sorted by the general path (the in-place sort is quadratic).
    static let maximumMembers = 64

    var level: LogLevel
    var sequence: UInt64
    var eventIDPrefix: UInt64
    var timestamp: LogTimestamp
    var line: UInt64
    /// Where the record's payload starts and ends in the bytes it was read from.
    var bytes: Range<Int>
    /// The call site's file name (the last component of its path), function and message, as UTF-8.
    var fileName: Range<Int>
    var function: Range<Int>
    var message: Range<Int>
    /// The record's `userInfo` members, in byte order of their keys: a range of the batch's member list.
    var members: Range<Int>

    /// The call site as the record holds it — its line, file path and function, each string after its length —
    /// one run of bytes: what ``LayoutTable`` compares of it, with one `memcmp`. (Computed: a stored range made
    /// the view large enough that each copy of it became a `memcpy` call, ~230 instructions an event.)
    var callSite: Range<Int> { bytes.lowerBound + JournalCodec.callSiteOffset..<function.upperBound }

    /// One `userInfo` member: where its key's UTF-8 lies and where its value's tag byte is.
    struct Member: Sendable {
        var key: Range<Int>
        var value: Int
        /// ``UTF8Order/head(of:)`` of the key: most comparisons of keys are one of integers.
        var head: UInt64
    }

    /// Reads the record that starts at `start` in `bytes` if it is plain (messages up to `maximumMessageBytes`),
    /// appending its members to `members` in key order; `nil` (and `members` as it was) if it is not plain or
    /// not whole.
    static func plain(
        in bytes: UnsafeRawBufferPointer,
        at start: Int,
        maximumMessageBytes: Int,
        members: inout [Member]
    ) -> JournalRecordView? {
        let firstMember = members.count
        var reader = InPlaceReader(bytes: bytes, offset: start)
        guard let view = reader.plainRecord(maximumMessageBytes: maximumMessageBytes, members: &members) else {
            members.removeSubrange(firstMember...)
            return nil
        }
        var record = view
        record.members = firstMember..<members.count
        record.bytes = start..<reader.offset
        sortByKey(&members, record.members, in: bytes)
        return record
    }

    /// Insertion sort by key bytes: a handful of members, already partly ordered by the dictionary's hashing.
    private static func sortByKey(_ members: inout [Member], _ range: Range<Int>, in bytes: UnsafeRawBufferPointer) {
        guard range.count > 1 else { return }
        // In the buffer: one uniqueness check, not one per store.
        members.withUnsafeMutableBufferPointer { members in
            for index in range.lowerBound + 1..<range.upperBound {
                let member = members[index]
                var slot = index
                while slot > range.lowerBound, precedes(member, members[slot - 1], in: bytes) {
                    members[slot] = members[slot - 1]
                    slot -= 1
                }
                members[slot] = member
            }
        }
    }
}

extension JournalRecordView {
    /// Where the last component of the path at `path` of `bytes` starts: after its last `/`, or at its start.
    /// Eight bytes at a time from the end (a call site's path is tens of bytes, its file name about twenty: a byte
    /// at a time cost ~150 instructions a record); `memrchr` is not on every platform.
    static func lastComponentStart(of path: Range<Int>, in bytes: UnsafeRawBufferPointer) -> Int {
        let slashes: UInt64 = 0x2F2F_2F2F_2F2F_2F2F
        let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        var end = path.upperBound
        while end - path.lowerBound >= 8 {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self))
            let x = word ^ slashes
            // 0x80 in each byte of `x` that is zero (a `/` in `word`), exactly: no carry crosses a byte.
            let slashBytes = ~(((x & low7) &+ low7) | x | low7)
            if slashBytes != 0 {
                // The highest such byte is the last `/` in memory (little-endian).
                let index = (63 - slashBytes.leadingZeroBitCount) / 8
                return end - 8 + index + 1
            }
            end -= 8
        }
        while end > path.lowerBound, bytes[end - 1] != UInt8(ascii: "/") { end -= 1 }
        return end
    }

    /// Whether `lhs`'s key comes before `rhs`'s in byte order.
    @inline(__always)
    fileprivate static func precedes(_ lhs: Member, _ rhs: Member, in bytes: UnsafeRawBufferPointer) -> Bool {
        if lhs.head != rhs.head { return lhs.head < rhs.head }
        return UTF8Order.compare(
            lhs.head,
            UnsafeRawBufferPointer(rebasing: bytes[lhs.key]),
            rhs.head,
            UnsafeRawBufferPointer(rebasing: bytes[rhs.key])
        ) < 0
    }
}

/// Reads the journal's encoding (see ``JournalCodec``) where it lies, checking every length against the bytes.
///
/// Offsets are at most `bytes.count`, and every length is checked against what is left before it is added: the
/// arithmetic can't overflow, and wraps (`&+`) instead of checking that it didn't. The fixed part of a record's head
/// is checked once. (Checked one field at a time, with an overflow trap each, reading a record with three members
/// cost ~620 instructions.)
private struct InPlaceReader {
    let bytes: UnsafeRawBufferPointer
    var offset: Int

    /// Version, level, sequence, event id prefix, timestamp and line: what every record starts with.
    static let headBytes = 2 + 4 * 8

    @inline(__always)
    private func word(at offset: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always)
    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset &+= 1 }
        return bytes[offset]
    }

    @inline(__always)
    mutating func word() -> UInt64? {
        guard bytes.count &- offset >= 8 else { return nil }
        defer { offset &+= 8 }
        return word(at: offset)
    }

    @inline(__always)
    mutating func string() -> Range<Int>? {
        guard bytes.count &- offset >= 4 else { return nil }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        let start = offset &+ 4
        guard length <= bytes.count &- start else { return nil }
        offset = start &+ length
        return Range(uncheckedBounds: (start, offset))
    }

    /// A scalar value (tags 0 … 6), skipped; `false` for a nested one or damage.
    @inline(__always)
    mutating func scalar() -> Bool {
        switch byte() {
        case 0: return string() != nil
        case 1, 2, 3: return word() != nil
        case 4, 5, 6: return true
        default: return false
        }
    }

    mutating func plainRecord(
        maximumMessageBytes: Int,
        members: inout [JournalRecordView.Member]
    ) -> JournalRecordView? {
        let start = offset
        guard bytes.count &- start >= Self.headBytes, bytes[start] == JournalCodec.version,
            let level = LogLevel(rawValue: Int(bytes[start &+ 1]))
        else { return nil }
        offset = start &+ Self.headBytes
        guard let file = string(), let function = string(), let message = string(),
            message.count <= maximumMessageBytes,
            let count = word(), count <= JournalRecordView.maximumMembers
        else { return nil }
        for _ in 0..<Int(count) {
            guard let key = string() else { return nil }
            let value = offset
            guard scalar() else { return nil }
            members.append(
                .init(key: key, value: value, head: UTF8Order.head(of: key, in: bytes))
            )
        }
        // No metadata, no truncations, no error.
        guard word() == 0, word() == 0, byte() == 0 else { return nil }
        let nameStart = JournalRecordView.lastComponentStart(of: file, in: bytes)
        return JournalRecordView(
            level: level,
            sequence: word(at: start &+ 2),
            eventIDPrefix: word(at: start &+ 10),
            timestamp: LogTimestamp(nanosecondsSinceEpoch: Int64(bitPattern: word(at: start &+ 18))),
            line: word(at: start &+ 26),
            bytes: 0..<0,
            fileName: nameStart..<file.upperBound,
            function: function,
            message: message,
            members: 0..<0
        )
    }
}
