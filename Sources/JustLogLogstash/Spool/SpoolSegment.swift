#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One segment file of the spool, mapped into memory with `MAP_SHARED`.
///
/// Layout: a 16-byte header (``magic`` then 8 reserved bytes), then records framed as
/// `[UInt32 length, little-endian][UInt32 CRC-32 of the payload, little-endian][payload]`, then zeros.
/// A zero length marks the end of the records.
///
/// Not thread-safe: ``LogstashSpool`` guards every segment with its lock.
final class SpoolSegment {
    /// The first 8 bytes of every segment file.
    static let magic: [UInt8] = Array("JLSPOOL1".utf8)
    /// Bytes before the first record.
    static let headerSize = 16
    /// Bytes of a record's frame before its payload.
    static let frameHeaderSize = 8

    /// The segment's sequence number (its file name, zero-padded).
    let sequence: UInt64
    /// The file's path.
    let path: String
    /// The mapping's (and the file's) size.
    let capacity: Int
    private let base: UnsafeMutableRawPointer
    private let fd: CInt
    /// The offset just past the last complete record.
    var end: Int
    /// Complete records in this segment.
    var recordCount: Int
    /// Sum of the payload sizes of those records.
    var payloadBytes: Int

    // MARK: - Opening

    /// The file name of segment `sequence`.
    static func fileName(_ sequence: UInt64) -> String {
        let digits = String(sequence)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".seg"
    }

    /// Creates a new, empty segment file of `capacity` bytes, with its blocks reserved so that a full disk
    /// is an error here instead of a `SIGBUS` while copying a record into the mapping.
    static func create(directory: String, sequence: UInt64, capacity: Int) throws -> SpoolSegment {
        let path = directory + "/" + fileName(sequence)
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw spoolError("can't create spool segment \(path)") }
        #if os(Linux)
        let rc = posix_fallocate(fd, 0, off_t(capacity))
        if rc != 0 {
            close(fd)
            unlink(path)
            throw LogstashError(code: .spoolUnavailable, message: "can't reserve \(capacity) bytes for spool segment \(path)", cause: String(cString: strerror(rc)))
        }
        #else
        guard ftruncate(fd, off_t(capacity)) == 0 else {
            let error = spoolError("can't size spool segment \(path)")
            close(fd)
            unlink(path)
            throw error
        }
        #endif
        let segment = try SpoolSegment(path: path, sequence: sequence, fd: fd, capacity: capacity)
        magic.withUnsafeBytes { segment.base.copyMemory(from: $0.baseAddress!, byteCount: magic.count) }
        segment.end = headerSize
        return segment
    }

    /// Opens an existing segment file and finds its records: stops at the first zero length, impossible
    /// length or CRC mismatch (a record torn by a crash), which becomes the end.
    static func recover(path: String, sequence: UInt64, maxRecordBytes: Int) throws -> SpoolSegment {
        let fd = openReadWrite(path)
        guard fd >= 0 else { throw spoolError("can't open spool segment \(path)") }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = spoolError("can't stat spool segment \(path)")
            close(fd)
            throw error
        }
        let size = Int(info.st_size)
        guard size > headerSize else {
            close(fd)
            throw LogstashError(code: .spoolUnavailable, message: "spool segment \(path) is truncated (\(size) bytes)")
        }
        let segment = try SpoolSegment(path: path, sequence: sequence, fd: fd, capacity: size)
        let header = UnsafeRawBufferPointer(start: segment.base, count: magic.count)
        if !header.elementsEqual(magic) {
            // Created but never initialized (killed between create and header write): an empty segment.
            magic.withUnsafeBytes { segment.base.copyMemory(from: $0.baseAddress!, byteCount: magic.count) }
        }
        segment.end = headerSize
        while let length = segment.validRecordLength(at: segment.end, maxRecordBytes: maxRecordBytes) {
            segment.end += frameHeaderSize + length
            segment.recordCount += 1
            segment.payloadBytes += length
        }
        if segment.end + frameHeaderSize <= size, segment.recordLength(at: segment.end) != 0 {
            // A torn record: wipe it so that records appended over it can't be followed by its leftovers.
            let torn = min(size, segment.end + frameHeaderSize + maxRecordBytes) - segment.end
            (segment.base + segment.end).initializeMemory(as: UInt8.self, repeating: 0, count: torn)
        }
        return segment
    }

    private init(path: String, sequence: UInt64, fd: CInt, capacity: Int) throws {
        guard let mapping = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
            mapping != UnsafeMutableRawPointer(bitPattern: -1)
        else {
            let error = spoolError("can't map spool segment \(path)")
            close(fd)
            throw error
        }
        self.path = path
        self.sequence = sequence
        self.fd = fd
        self.capacity = capacity
        self.base = mapping
        self.end = Self.headerSize
        self.recordCount = 0
        self.payloadBytes = 0
    }

    deinit {
        munmap(base, capacity)
        close(fd)
    }

    // MARK: - Records

    /// `true` if a record of `payloadCount` bytes fits after ``end``.
    func fits(_ payloadCount: Int) -> Bool {
        end + Self.frameHeaderSize + payloadCount <= capacity
    }

    /// Copies a record after ``end``: payload first, then its CRC, then its length, so that a reader of the
    /// file never sees a length before the bytes it covers.
    func append(_ payload: UnsafeRawBufferPointer) {
        let frame = base + end
        (frame + Self.frameHeaderSize).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        frame.storeBytes(of: CRC32.checksum(payload).littleEndian, toByteOffset: 4, as: UInt32.self)
        frame.storeBytes(of: UInt32(payload.count).littleEndian, toByteOffset: 0, as: UInt32.self)
        end += Self.frameHeaderSize + payload.count
        recordCount += 1
        payloadBytes += payload.count
    }

    /// The payload length of the record at `offset`, which must be a frame boundary before ``end``.
    func recordLength(at offset: Int) -> Int {
        Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
    }

    /// The payload of the record at `offset`.
    func payload(at offset: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + offset + Self.frameHeaderSize, count: recordLength(at: offset))
    }

    /// The payload length of a complete, intact record at `offset`, or `nil` if there is none.
    private func validRecordLength(at offset: Int, maxRecordBytes: Int) -> Int? {
        guard offset + Self.frameHeaderSize <= capacity else { return nil }
        let length = recordLength(at: offset)
        guard length > 0, length <= maxRecordBytes, offset + Self.frameHeaderSize + length <= capacity else { return nil }
        let stored = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
        let payload = UnsafeRawBufferPointer(start: base + offset + Self.frameHeaderSize, count: length)
        return CRC32.checksum(payload) == stored ? length : nil
    }

    /// Counts records and payload bytes from `offset` (a frame boundary) to `limit` (another one).
    func count(from offset: Int, to limit: Int) -> (records: Int, bytes: Int) {
        var records = 0
        var bytes = 0
        var position = offset
        while position < min(limit, end) {
            let length = recordLength(at: position)
            records += 1
            bytes += length
            position += Self.frameHeaderSize + length
        }
        return (records, bytes)
    }

    /// Unmaps and deletes the file.
    func remove() {
        unlink(path)
    }
}

/// `open(2)` for an existing file, read-write.
private func openReadWrite(_ path: String) -> CInt {
    open(path, O_RDWR | O_CLOEXEC)
}

/// A ``LogstashError`` for a failed system call, with `errno`'s description as the cause.
func spoolError(_ message: String) -> LogstashError {
    LogstashError(code: .spoolUnavailable, message: message, cause: String(cString: strerror(errno)))
}
