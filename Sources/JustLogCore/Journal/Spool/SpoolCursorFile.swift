#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The spool's `cursor` file: where the oldest record not yet acknowledged is, written with one `pwrite`
/// per acknowledgement — and per segment started, for the newest segment it names.
///
/// Layout (48 bytes, little-endian): segment `UInt64`, offset `UInt64`, the serial of the first record at or
/// after that place `UInt64`, the newest segment made `UInt64` and the serial the next record was to get when it
/// became the newest `UInt64` (see ``Newest``), CRC-32 of those 40 bytes `UInt32`, format `UInt32` (3). Earlier
/// versions wrote the first three words, their CRC-32 and format 2 (32 bytes), or only the first 16 bytes; such a
/// cursor is still read (without a newest segment), the 16-byte one trusted only if it points at a record boundary.
struct SpoolCursorFile {
    /// The newest segment made, as the cursor file remembers it: a segment the folder no longer has, newer than
    /// every one it has, was deleted with its records (see ``SpoolRecovery``).
    struct Newest: Equatable {
        /// Its sequence number.
        var segment: UInt64
        /// The serial the next record was to get when it became the newest segment: every record of an older
        /// segment has a lower one.
        var nextSerial: UInt64
    }

    /// What the file holds.
    enum Content: Equatable {
        /// No cursor yet (a new spool).
        case none
        /// A cursor whose checksum holds, with the newest segment made (`nil` in the 32-byte format, which had none).
        case current(SpoolPosition, serial: UInt64, newest: Newest?)
        /// A cursor of the earlier 16-byte format (no checksum, no serial).
        case legacy(SpoolPosition)
        /// Bytes that are not a cursor: its checksum fails, or its size is wrong.
        case damaged
    }

    static let size = 48
    private static let format: UInt32 = 3
    /// The size and format of the version before, which had no newest segment.
    private static let previousSize = 32
    private static let previousFormat: UInt32 = 2
    let path: String
    private let fd: CInt

    /// Opens (creating, owner-only) the cursor file at `path`.
    init(path: String) throws(SpoolOpenFailure) {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw SpoolOpenFailure("can't open spool cursor \(path)") }
        // A regular file of one link only (not a hard link to another file of this user's): otherwise moved aside.
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1 else {
            closeDescriptor(fd)
            throw SpoolOpenFailure(
                JustLogError(
                    code: .spoolUnavailable,
                    message: "spool cursor \(path) is not a regular file of one link"
                ),
                lasts: true
            )
        }
        self.path = path
    }

    func close() {
        closeDescriptor(fd)
    }

    /// Reads and checks the file.
    func read() -> Content {
        var bytes = [UInt8](repeating: 0, count: Self.size + 1)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, Self.size + 1, 0) }
        func word(_ index: Int) -> UInt64 {
            bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)) }
        }
        /// Whether the `UInt32` after the first `checked` bytes is their CRC-32, and the one after it `format`.
        func checks(_ checked: Int, format: UInt32) -> Bool {
            bytes.withUnsafeBytes { raw -> Bool in
                let stored = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: checked, as: UInt32.self))
                let written = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: checked + 4, as: UInt32.self))
                return written == format && stored == CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<checked]))
            }
        }
        // A number past any a spool reaches is damage (see ``SpoolSegment/largestNumber``).
        let plausible = { (words: Int) in (0..<words).allSatisfy { word($0) <= SpoolSegment.largestNumber } }
        switch count {
        case 0:
            return .none
        case 16:
            guard let offset = Int(exactly: word(1)), plausible(1) else { return .damaged }
            return .legacy(SpoolPosition(segment: word(0), offset: offset))
        case Self.previousSize:
            guard checks(24, format: Self.previousFormat), let offset = Int(exactly: word(1)), plausible(3) else {
                return .damaged
            }
            return .current(SpoolPosition(segment: word(0), offset: offset), serial: word(2), newest: nil)
        case Self.size:
            guard checks(40, format: Self.format), let offset = Int(exactly: word(1)), plausible(5) else {
                return .damaged
            }
            return .current(
                SpoolPosition(segment: word(0), offset: offset),
                serial: word(2),
                newest: Newest(segment: word(3), nextSerial: word(4))
            )
        default:
            return .damaged
        }
    }

    /// Writes `position`, `serial` and `newest` (one `pwrite` of 48 bytes); returns whether it was written whole.
    @discardableResult
    func write(_ position: SpoolPosition, serial: UInt64, newest: Newest) -> Bool {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: position.segment.littleEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: UInt64(clamping: position.offset).littleEndian, toByteOffset: 8, as: UInt64.self)
            raw.storeBytes(of: serial.littleEndian, toByteOffset: 16, as: UInt64.self)
            raw.storeBytes(of: newest.segment.littleEndian, toByteOffset: 24, as: UInt64.self)
            raw.storeBytes(of: newest.nextSerial.littleEndian, toByteOffset: 32, as: UInt64.self)
            raw.storeBytes(
                of: CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<40])).littleEndian,
                toByteOffset: 40,
                as: UInt32.self
            )
            raw.storeBytes(of: Self.format.littleEndian, toByteOffset: 44, as: UInt32.self)
        }
        return bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, Self.size, 0) } == Self.size
    }
}
