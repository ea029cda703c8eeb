#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The serials of records already reported lost, kept in the spool's `losses` file so that a damaged record
/// is reported once — not again each time the program starts before the collector got past it — of reserved
/// places never filled (calls that never returned), so that one written over later is never taken for a loss, and
/// of records delivered whose segments were deleted before a cursor past them could be saved (see `SpoolStorage`),
/// so that the next open, starting from the cursor saved last, does not count them lost.
///
/// Layout: `JLLOSS01`, a count `UInt32`, the CRC-32 of the ranges `UInt32`, then each range as two
/// little-endian `UInt64` (first serial, serial after the last). Written to a temporary file and renamed, and
/// only when the spool is opened and finds something new. A file that does not check out counts as empty:
/// the worst outcome is a loss reported twice, never a loss not reported.
struct SpoolLossLedger: Equatable {
    static let fileName = "losses"
    private static let magic: [UInt8] = Array("JLLOSS01".utf8)
    /// The most ranges kept; past it the oldest are forgotten (and may be reported again).
    static let maximumRanges = 1024

    /// Disjoint serial ranges, in order.
    private(set) var ranges: [Range<UInt64>]

    init(ranges: [Range<UInt64>] = []) {
        self.ranges = Array(
            ranges.filter { !$0.isEmpty }.sorted { $0.lowerBound < $1.lowerBound }.suffix(Self.maximumRanges)
        )
    }

    /// The ledger in `directory`, or an empty one if there is none, it can't be opened, or it does not check out.
    static func load(directory: String) -> SpoolLossLedger {
        loadToAdd(directory: directory) ?? SpoolLossLedger()
    }

    /// The ledger in `directory` to add ranges to: as ``load(directory:)``, but `nil` if a ledger is there and can't
    /// be opened now (no descriptor left, no memory): saved over, what it holds would be forgotten.
    static func loadToAdd(directory: String) -> SpoolLossLedger? {
        let fd = open(directory + "/" + fileName, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return errno == ENOENT ? SpoolLossLedger() : nil }
        defer { closeDescriptor(fd) }
        let limit = 16 + 16 * maximumRanges
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, limit + 1, 0) }
        guard count >= 16, count <= limit, Array(bytes[0..<8]) == magic else { return SpoolLossLedger() }
        return bytes.withUnsafeBytes { raw -> SpoolLossLedger in
            let entries = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
            let stored = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
            guard count == 16 + 16 * entries,
                CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[16..<count])) == stored
            else { return SpoolLossLedger() }
            let ranges = (0..<entries).compactMap { index -> Range<UInt64>? in
                let low = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 16 + 16 * index, as: UInt64.self))
                let high = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 24 + 16 * index, as: UInt64.self))
                // A number past any a spool reaches is damage (see ``SpoolSegment/largestNumber``).
                return low < high && high <= SpoolSegment.largestNumber + 1 ? low..<high : nil
            }
            return SpoolLossLedger(ranges: ranges)
        }
    }

    /// Writes the ledger to `directory` (atomically: a temporary file, renamed). Returns whether it worked.
    @discardableResult
    func save(directory: String) -> Bool {
        var bytes = Self.magic + [UInt8](repeating: 0, count: 8 + 16 * ranges.count)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt32(ranges.count).littleEndian, toByteOffset: 8, as: UInt32.self)
            for (index, range) in ranges.enumerated() {
                raw.storeBytes(of: range.lowerBound.littleEndian, toByteOffset: 16 + 16 * index, as: UInt64.self)
                raw.storeBytes(of: range.upperBound.littleEndian, toByteOffset: 24 + 16 * index, as: UInt64.self)
            }
            let checksum = CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[16...]))
            raw.storeBytes(of: checksum.littleEndian, toByteOffset: 12, as: UInt32.self)
        }
        let path = directory + "/" + Self.fileName
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return false }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        closeDescriptor(fd)
        guard written == bytes.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// Adds `ranges` to the ledger in `directory` and saves it; `false` if it could not be read or saved (the caller
    /// says what that costs: the next open may count those serials lost).
    static func add(_ ranges: [Range<UInt64>], directory: String) -> Bool {
        loadToAdd(directory: directory)?.adding(ranges).save(directory: directory) ?? false
    }

    /// This ledger with `more` ranges too, overlapping or adjacent ones joined (``unreported(in:)`` needs them
    /// disjoint).
    func adding(_ more: [Range<UInt64>]) -> SpoolLossLedger {
        var joined: [Range<UInt64>] = []
        for range in (ranges + more).filter({ !$0.isEmpty }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = joined.last, range.lowerBound <= last.upperBound {
                joined[joined.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                joined.append(range)
            }
        }
        return SpoolLossLedger(ranges: joined)
    }

    /// How many serials of `lost` (disjoint ranges) this ledger does not hold yet.
    func unreported(in lost: [Range<UInt64>]) -> UInt64 {
        var count: UInt64 = 0
        for range in lost {
            var covered: UInt64 = 0
            for known in ranges where known.overlaps(range) {
                let overlap = known.clamped(to: range)
                covered += overlap.upperBound - overlap.lowerBound
            }
            count += (range.upperBound - range.lowerBound) - covered
        }
        return count
    }
}
