#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What ``SpoolSegment/scan()`` found in one segment file.
struct SegmentScan: Sendable {
    /// Intact records back to back with consecutive serials.
    struct Run: Sendable, Hashable {
        var firstSerial: UInt64
        var lastSerial: UInt64
        /// Where the first of them starts.
        var offset: Int
    }

    /// The intact records, in file order (empty for a legacy segment, whose records have no serials).
    var runs: [Run] = []
    /// Serials of records whose frame header checks out but whose payload doesn't (damaged, or cut off by
    /// the end of the file).
    var damagedSerials: [UInt64] = []
    /// Stretches of damaged bytes between intact records: where each starts and how long it is.
    var damage: [(offset: Int, length: Int)] = []
    /// Serials of reserved frames never filled (see ``SpoolSegment/reserve(_:serial:)``): calls the process was killed
    /// in, which never returned. Skipped, and not lost.
    var unfinishedSerials: [UInt64] = []
    /// Where unreadable bytes after the last intact record start, if any (legacy segments: the only damage
    /// they can report).
    var unreadableTail: Int?
    /// The serial of the last record appended, as the segment header says, if the header is intact.
    var committedSerial: UInt64?
    /// The header's magic was damaged (and was written again, if it could be).
    var repairedHeader = false

    /// The lowest and highest serial seen in the file (intact, damaged or committed), if any.
    var serials: ClosedRange<UInt64>? {
        let all =
            runs.flatMap { [$0.firstSerial, $0.lastSerial] } + damagedSerials + unfinishedSerials
            + (committedSerial.map { $0 > 0 ? [$0] : [] } ?? [])
        guard let low = all.min(), let high = all.max() else { return nil }
        return low...high
    }
}

extension SpoolSegment {
    /// What a frame header at some offset turned out to be.
    private enum FrameCheck: Equatable {
        /// Not a frame start (no magic, or a header that does not check out).
        case none
        /// A complete record whose header and payload check out.
        case intact(length: Int, serial: UInt64)
        /// A frame header that checks out in front of a payload that does not (or that the file cuts off).
        case damaged(length: Int, serial: UInt64)
        /// A reserved frame whose record was never (or not wholly) copied in: its call never returned.
        case unfinished(length: Int, serial: UInt64)
    }

    /// Finds the records of a segment just opened, sets ``end``, ``recordCount``, ``payloadBytes`` and
    /// ``skips``, and says what it could not read. Reads only: no byte of the file is changed, except a
    /// damaged header magic, which is written again.
    ///
    /// A damaged record whose frame header is intact is skipped exactly (its length is known); after bytes
    /// that are no frame at all, the next frame is found by its magic and its header's checksum. A reserved frame
    /// never filled is skipped exactly too, and its serial is not a loss.
    func scan() -> SegmentScan {
        format == .legacy ? scanLegacy() : scanFramed()
    }

    private func scanFramed() -> SegmentScan {
        var result = SegmentScan()
        let header = UnsafeRawBufferPointer(start: base, count: Self.magic.count)
        if !header.elementsEqual(format.magic) {
            // Created but killed before its header was written, or damaged: the header is ours to rewrite, in the
            // format its first record's checksums say (an earlier version's segment stays in its format).
            if check(at: firstFrameOffset) == .none, check(at: firstFrameOffset, checksum: .crc32) != .none {
                format = .framed(.crc32)
            }
            // Through the file, on a full disk, it may not be written: the next open writes it then.
            _ = write(format.magic, at: 0)
            result.repairedHeader = true
        }
        result.committedSerial = committedSerial
        let headerSize = Self.frameHeaderSize
        var offset = firstFrameOffset
        // Where the stretch of bytes that are no intact record starts (reading jumps it), and where its first damaged
        // byte is (a stretch of unfinished frames alone is no damage).
        var skipStart: Int?
        var damageStart: Int?
        end = offset
        scanning: while offset + headerSize <= capacity {
            switch check(at: offset) {
            case .intact(let length, let serial):
                if let start = skipStart {
                    skips[start] = offset
                    skipStart = nil
                }
                if let start = damageStart {
                    result.damage.append((start, offset - start))
                    damageStart = nil
                }
                if let last = result.runs.last, last.lastSerial &+ 1 == serial, end == offset {
                    result.runs[result.runs.count - 1].lastSerial = serial
                } else {
                    result.runs.append(.init(firstSerial: serial, lastSerial: serial, offset: offset))
                }
                recordCount += 1
                payloadBytes += length
                offset += headerSize + length
                end = offset
            case .damaged(let length, let serial):
                if skipStart == nil { skipStart = offset }
                if damageStart == nil { damageStart = offset }
                result.damagedSerials.append(serial)
                offset += headerSize + length
            case .unfinished(let length, let serial):
                if skipStart == nil { skipStart = offset }
                result.unfinishedSerials.append(serial)
                offset += headerSize + length
            case .none where offset == end && isLastReservedFrame(at: offset, committedSerial: result.committedSerial):
                // Where the intact records end, a frame never committed whose serial the header names, though
                // neither its stub nor its record checks out: a write through the file refused partway (its header
                // serial written, its commit mark not), then part of the next try's stub written over it. Its call
                // never returned; what follows it is found by its checksums.
                skipStart = offset
                result.unfinishedSerials.append(result.committedSerial!)
                guard let next = nextCandidate(after: offset) else { break scanning }
                offset = next
            case .none:
                if skipStart == nil { skipStart = offset }
                if damageStart == nil { damageStart = offset }
                guard let next = nextCandidate(after: offset) else { break scanning }
                offset = next
            }
        }
        if let start = damageStart, lastNonZero(from: start) != nil {
            result.unreadableTail = start
        }
        return result
    }

    private func scanLegacy() -> SegmentScan {
        var result = SegmentScan()
        var offset = firstFrameOffset
        while offset + 8 <= capacity {
            let length = Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            guard length > 0, length <= capacity - offset - 8 else { break }
            let stored = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
            guard CRC32.checksum(UnsafeRawBufferPointer(start: base + offset + 8, count: length)) == stored else {
                break
            }
            recordCount += 1
            payloadBytes += length
            offset += 8 + length
        }
        end = offset
        if lastNonZero(from: end) != nil { result.unreadableTail = end }
        return result
    }

    /// What the bytes at `offset` hold (a framed format), checked with `checksum` (default: the segment's).
    private func check(at offset: Int, checksum: Checksum? = nil) -> FrameCheck {
        guard case .framed(let segmentChecksum) = format else { return .none }
        let checksum = checksum ?? segmentChecksum
        guard offset + Self.frameHeaderSize <= capacity else { return .none }
        let magic = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        if magic == Self.reservedMagic { return checkReserved(at: offset) }
        guard magic == Self.frameMagic else { return .none }
        let headerCRC = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 20, as: UInt32.self))
        guard checksum(UnsafeRawBufferPointer(start: base + offset, count: 20)) == headerCRC else { return .none }
        let length = Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
        let serial = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
        guard length > 0, serial <= Self.largestNumber else { return .none }
        guard length <= capacity - offset - Self.frameHeaderSize else {
            return .damaged(length: length, serial: serial)
        }
        let payloadCRC = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 16, as: UInt32.self))
        let payload = UnsafeRawBufferPointer(start: base + offset + Self.frameHeaderSize, count: length)
        return checksum(payload) == payloadCRC
            ? .intact(length: length, serial: serial) : .damaged(length: length, serial: serial)
    }

    /// What a frame that starts with the reserved magic holds: ``FrameCheck/unfinished(length:serial:)`` if it is a
    /// stub, or a record copied in whose commit mark was not written yet; ``FrameCheck/none`` otherwise.
    private func checkReserved(at offset: Int) -> FrameCheck {
        let length = Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
        let serial = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
        guard length > 0, length <= capacity - offset - Self.frameHeaderSize, serial <= Self.largestNumber else {
            return .none
        }
        let check = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
        if check == Self.reservationCheck(length: length, serial: serial) {
            return .unfinished(length: length, serial: serial)
        }
        // Filled up to the commit mark: the header checks out with the frame magic in its place, and so does the
        // payload, copied in before the header's checksums (if it does not, the bytes were damaged since).
        let payloadCRC = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 16, as: UInt32.self))
        let headerCRC = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 20, as: UInt32.self))
        guard Self.committedHeaderChecksum(ofFrameAt: base + offset, payloadCRC: payloadCRC) == headerCRC else {
            return .none
        }
        let payload = UnsafeRawBufferPointer(start: base + offset + Self.frameHeaderSize, count: length)
        return CRC32C.checksum(payload) == payloadCRC
            ? .unfinished(length: length, serial: serial) : .damaged(length: length, serial: serial)
    }

    /// Whether the frame at `offset` starts with the reserved magic and holds `committedSerial`, the header's.
    private func isLastReservedFrame(at offset: Int, committedSerial: UInt64?) -> Bool {
        guard let committedSerial, offset + Self.frameHeaderSize <= capacity else { return false }
        return UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) == Self.reservedMagic
            && UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)) == committedSerial
    }

    /// The next offset after `offset` where a frame header that checks out starts, if any.
    private func nextCandidate(after offset: Int) -> Int? {
        let lastStart = capacity - Self.frameHeaderSize
        let firstByte = Int32(Self.frameMagic & 0xFF)
        var from = offset + 1
        while from <= lastStart {
            guard let found = memchr(base + from, firstByte, lastStart + 1 - from) else { return nil }
            let candidate = base.distance(to: found)
            if check(at: candidate) != .none { return candidate }
            from = candidate + 1
        }
        return nil
    }

    /// The offset of the last non-zero byte at or after `offset`, if any.
    func lastNonZero(from offset: Int) -> Int? {
        var position = capacity
        while position > offset {
            let word = position - 8
            if word >= offset, base.loadUnaligned(fromByteOffset: word, as: UInt64.self) == 0 {
                position = word
                continue
            }
            position -= 1
            if base.load(fromByteOffset: position, as: UInt8.self) != 0 { return position }
        }
        return nil
    }
}
