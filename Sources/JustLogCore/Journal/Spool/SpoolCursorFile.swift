#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The spool's `cursor` file: where the oldest record not yet acknowledged is, written with one `pwrite`
/// per acknowledgement.
///
/// Layout (32 bytes, little-endian): segment `UInt64`, offset `UInt64`, the serial of the first record at or
/// after that place `UInt64`, CRC-32 of those 24 bytes `UInt32`, format `UInt32` (2). An earlier version wrote
/// only the first 16 bytes; such a cursor is still read, but trusted only if it points at a record boundary.
struct SpoolCursorFile {
    /// What the file holds.
    enum Content: Equatable {
        /// No cursor yet (a new spool).
        case none
        /// A cursor whose checksum holds.
        case current(SpoolPosition, serial: UInt64)
        /// A cursor of the earlier 16-byte format (no checksum, no serial).
        case legacy(SpoolPosition)
        /// Bytes that are not a cursor: its checksum fails, or its size is wrong.
        case damaged
    }

    static let size = 32
    private static let format: UInt32 = 2
    let path: String
    private let fd: CInt

    /// Opens (creating, owner-only) the cursor file at `path`.
    init(path: String) throws(SpoolOpenFailure) {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SpoolOpenFailure("can't open spool cursor \(path)") }
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
        switch count {
        case 0:
            return .none
        case 16:
            guard let offset = Int(exactly: word(1)) else { return .damaged }
            return .legacy(SpoolPosition(segment: word(0), offset: offset))
        case Self.size:
            let stored = bytes.withUnsafeBytes {
                UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 24, as: UInt32.self))
            }
            let format = bytes.withUnsafeBytes {
                UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 28, as: UInt32.self))
            }
            let checksum = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<24])) }
            guard format == Self.format, stored == checksum, let offset = Int(exactly: word(1)) else { return .damaged }
            return .current(SpoolPosition(segment: word(0), offset: offset), serial: word(2))
        default:
            return .damaged
        }
    }

    /// Writes `position` and `serial` (one `pwrite` of 32 bytes); returns whether it was written whole.
    @discardableResult
    func write(_ position: SpoolPosition, serial: UInt64) -> Bool {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: position.segment.littleEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: UInt64(clamping: position.offset).littleEndian, toByteOffset: 8, as: UInt64.self)
            raw.storeBytes(of: serial.littleEndian, toByteOffset: 16, as: UInt64.self)
            raw.storeBytes(
                of: CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<24])).littleEndian,
                toByteOffset: 24,
                as: UInt32.self
            )
            raw.storeBytes(of: Self.format.littleEndian, toByteOffset: 28, as: UInt32.self)
        }
        return bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, Self.size, 0) } == Self.size
    }
}
