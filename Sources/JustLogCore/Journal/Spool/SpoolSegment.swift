import CJustLogAtomics
import CJustLogFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One segment file of the spool, mapped into memory with `MAP_SHARED`.
///
/// ## Layout (format 3, `JLSPOOL3`)
/// A 32-byte header — ``magic``, then the *serial* of the last record appended (little-endian `UInt64`),
/// then its bitwise complement (so a torn or damaged value is recognised), then 8 zero bytes — and then
/// records, each framed as
///
/// | bytes | content |
/// |---|---|
/// | 0‥4 | ``frameMagic`` (`F9 4A 52 32`; `0xF9` never occurs in UTF-8 text) |
/// | 4‥8 | payload length, little-endian `UInt32` |
/// | 8‥16 | the record's serial, little-endian `UInt64`: one more than the record before, across segments |
/// | 16‥20 | CRC-32C of the payload |
/// | 20‥24 | CRC-32C of bytes 0‥20 (the frame header itself) |
/// | 24‥ | payload |
///
/// and zeros after the last record.
///
/// Every frame is written in two steps: *reserved* (see ``reserve(_:serial:)``), then filled (``fill(_:with:)``) —
/// at once by an append, under the spool's lock, or by a journal's log call after it released the lock. Until it
/// is filled the frame holds a stub — ``reservedMagic`` (the frame
/// magic with first byte `FA`, which never occurs in UTF-8 text either), the length, the serial, and at 16‥24
/// ``reservationCheck(length:serial:)`` — and filling it writes the payload, then bytes 16‥24 (one store), then
/// the first byte `F9`: the commit mark. A reader stops at a frame whose mark is not set and waits for it; a
/// stub found when the folder is opened belongs to a call the process was killed in, which never returned: it
/// is skipped and not counted as lost.
///
/// The frame magic and the header's own checksum let a reader find the
/// next record after damaged bytes (see ``scan()``); serials let it count exactly how many records it
/// could not read; the header's last serial covers the records at the end of the file.
///
/// The checksums are CRC-32C, which the processor computes (see ``CRC32C``). Earlier formats are still read, so
/// that records spooled or journaled by an earlier version are sent; nothing is appended to such a segment:
/// format 2 (`JLSPOOL2`) is this layout with CRC-32 (zlib's) checksums; format 1 (`JLSPOOL1`) has a 16-byte header
/// and 8-byte frames `[length][CRC-32][payload]`, no serials.
///
/// ## Written through the mapping, or through the file
/// Where a write into a shared mapping can kill the program, the segment is written with `pwrite` instead and mapped
/// read-only (``writesThroughFile``): on btrfs (and ZFS, bcachefs) every write allocates new blocks (copy on write),
/// blocks reserved with `posix_fallocate` included, so on a full disk the first write into a page written before
/// raised `SIGBUS` (`Scripts/btrfs-full-disk/run`). There a record is written whole under the spool's lock (no
/// place is reserved to be filled after it): the frame's stub, the payload, its checksums, the header's serial,
/// then the commit mark, each with `pwrite`, so a failed write (`ENOSPC`) throws and appends nothing (see
/// ``appendThroughFile(_:serial:)``). On btrfs a new segment also has copy-on-write turned off before its blocks are
/// reserved (`chattr +C`): its writes then land in those blocks and need no free space for their data. Elsewhere
/// (ext4, XFS, tmpfs) reserved blocks are written in place, and the mapping is written directly: a log call copies
/// its record in without a system call. On a file system `statfs` does not name (overlayfs, whose upper layer may be
/// btrfs, as Podman's is on Fedora), a new segment for which copy-on-write can be turned off is on btrfs, and is
/// written through the file (`cjustlog_segment_copies_on_write`; overlayfs over ext4 or XFS refuses the flag and
/// keeps the mapping). Not detected: ZFS or bcachefs under a stacked file system; FUSE (which raises no `SIGBUS`,
/// but may drop a mapping's pages on a full disk); Apple's platforms (nothing is reserved there: the file is sized
/// with `ftruncate`).
///
/// Not thread-safe: ``Spool`` guards every segment with its lock (a retired one, out of its list, belongs to the thread
/// that retired it) — but for a reserved frame's bytes, which the thread that reserved it fills without the lock
/// (``fill(_:with:)``), and whose commit mark readers load with acquire ordering (``isCommitted(at:)``).
final class SpoolSegment {
    /// The layouts a segment file may have.
    enum Format: Hashable, Sendable {
        /// `JLSPOOL1`: no frame magic, no serials; read only.
        case legacy
        /// The layout described on the type: `JLSPOOL2` with CRC-32 checksums (read only), `JLSPOOL3` with CRC-32C.
        case framed(Checksum)

        /// What new segments are written in.
        static let current = Format.framed(.crc32c)

        /// Bytes before the first record.
        var headerSize: Int { self == .legacy ? 16 : 32 }
        /// Bytes of a record's frame before its payload.
        var frameHeaderSize: Int { self == .legacy ? 8 : 24 }
        /// Whether records have a frame magic and serials (formats 2 and 3).
        var isFramed: Bool { self != .legacy }

        /// The first 8 bytes of a segment file in this format.
        var magic: [UInt8] {
            switch self {
            case .legacy: Array("JLSPOOL1".utf8)
            case .framed(.crc32): Array("JLSPOOL2".utf8)
            case .framed(.crc32c): Array("JLSPOOL3".utf8)
            }
        }

        /// The format `header` names when it is a later one than this version knows (`JLSPOOL4` to `JLSPOOL9`).
        static func newerVersion(magic header: [UInt8]) -> String? {
            let known = Format.current.magic
            guard header.count == known.count, header.dropLast() == known.dropLast(), let version = header.last,
                version > known.last!, version <= UInt8(ascii: "9")
            else { return nil }
            return String(decoding: header, as: UTF8.self)
        }

        /// The format whose magic `header` is, if any.
        init?(magic header: [UInt8]) {
            guard let format = [Format.legacy, .framed(.crc32), .framed(.crc32c)].first(where: { $0.magic == header })
            else { return nil }
            self = format
        }
    }

    /// A framed segment's checksum.
    enum Checksum: Hashable, Sendable {
        /// zlib's CRC-32 (format 2).
        case crc32
        /// CRC-32C, by the processor where it can (format 3).
        case crc32c

        func callAsFunction(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
            switch self {
            case .crc32: CRC32.checksum(bytes)
            case .crc32c: CRC32C.checksum(bytes)
            }
        }
    }

    /// The first 8 bytes of a segment file in the current format.
    static let magic: [UInt8] = Format.current.magic
    /// The largest serial or segment number taken from a file: beyond any a spool reaches (one a nanosecond for a
    /// century stays below 2^62), and far enough below `UInt64.max` that adding to it never traps. A larger one, in
    /// a header, a frame, a cursor file, a loss ledger or a segment's name, is damage (any writer of the folder can
    /// put one there: an open trapped on it, at every start — review, helper-69).
    static let largestNumber: UInt64 = 1 << 62
    /// The first 4 bytes of every format-2 frame, read as a little-endian `UInt32`.
    static let frameMagic: UInt32 = 0x3252_4AF9
    /// The first 4 bytes of a reserved frame that is not filled yet, read as a little-endian `UInt32`.
    static let reservedMagic: UInt32 = 0x3252_4AFA
    /// The first byte of a reserved frame until it is filled.
    static let reservedMark = UInt8(truncatingIfNeeded: reservedMagic)
    /// The header size of new segments.
    static let headerSize = Format.current.headerSize
    /// The frame header size of new records.
    static let frameHeaderSize = Format.current.frameHeaderSize

    /// The segment's sequence number (its file name, zero-padded).
    private(set) var sequence: UInt64
    /// The file's path.
    private(set) var path: String
    /// The mapping's (and the file's) size.
    let capacity: Int
    /// The file's layout (a framed segment whose header magic was damaged is told by its first record). Set when the
    /// segment is made or opened: read for every record without the run-time exclusivity check.
    @exclusivity(unchecked) var format: Format
    let base: UnsafeMutableRawPointer
    private let fd: CInt
    /// Whether the segment's bytes are written with `pwrite`, its mapping read-only (see the type's discussion):
    /// records are appended with ``appendThroughFile(_:serial:)``, never reserved (``reserve(_:serial:)``).
    let writesThroughFile: Bool
    /// The offset just past the last intact record (where the next one is appended).
    @exclusivity(unchecked) var end: Int
    /// Whether the segment may become the spool's spare once acknowledged (see ``retireAsSpare(directory:)``):
    /// made by this process, so every byte after ``end`` is still zero.
    private(set) var isRecyclable = false
    /// Intact records in this segment.
    @exclusivity(unchecked) var recordCount: Int
    /// Sum of the payload sizes of those records.
    @exclusivity(unchecked) var payloadBytes: Int
    /// Where the first place reserved in this segment to be filled after the spool's lock (``reserve(_:serial:)``
    /// called by ``SpoolStorage/reserve(_:)``) starts: no frame before it can still be being filled. `Int.max` while
    /// there is none — always, in a spool that only appends.
    @exclusivity(unchecked) var firstReservedOffset = Int.max
    /// Damaged stretches before ``end``, found when the segment was opened: where each starts → where the next
    /// intact record starts. Reading jumps over them. Set when the segment is opened, and looked at for every record
    /// read or counted (without the run-time exclusivity check).
    @exclusivity(unchecked) var skips: [Int: Int] = [:]

    /// Where the first record starts.
    var firstFrameOffset: Int { format.headerSize }
    /// Whether records may be appended (only to the current format).
    var isAppendable: Bool { format == .current }

    // MARK: - Opening

    /// The segment number a file named `name` holds, if it names a segment: `nil` for any other name, and for a
    /// number past any a spool reaches (see ``largestNumber``).
    static func sequence(inFileName name: String) -> UInt64? {
        guard name.hasSuffix(".seg"), let sequence = UInt64(name.dropLast(4)), sequence <= largestNumber else {
            return nil
        }
        return sequence
    }

    /// The file name of segment `sequence`.
    static func fileName(_ sequence: UInt64) -> String {
        let digits = String(sequence)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".seg"
    }

    /// Creates a new, empty segment file of `capacity` bytes, with its blocks reserved so that a full disk
    /// (or a file-size limit) is an error here instead of a `SIGBUS` while copying a record into the mapping.
    /// `writes` says how its records reach the file (see ``Spool/Configuration/SegmentWrites``).
    static func create(
        directory: String,
        sequence: UInt64,
        capacity: Int,
        writes: Spool.Configuration.SegmentWrites
    ) throws -> SpoolSegment {
        // Past `ulimit -f` the kernel would kill the process with SIGXFSZ; ignored, the reservation fails
        // with EFBIG and the spool reports it like a full disk.
        FileSizeLimit.failWritesInsteadOfKilling()
        let path = directory + "/" + fileName(sequence)
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw spoolError("can't create spool segment \(path)") }
        let throughFile = writes.throughFile(fd, isNew: true, directory: directory)
        // Before any block is reserved: the flag can only be set on an empty file (and may be already, by the
        // file system's probe). Where it can't be set (not btrfs, or a btrfs mounted to compress), writes may fail
        // on a full disk — with an error, not a signal.
        if throughFile { _ = cjustlog_disable_copy_on_write(fd) }
        #if os(Linux)
        let rc = posix_fallocate(fd, 0, off_t(capacity))
        if rc != 0 {
            close(fd)
            unlink(path)
            throw JustLogError(
                code: .spoolUnavailable,
                message: "can't reserve \(capacity) bytes for spool segment \(path)",
                cause: String(cString: strerror(rc))
            )
        }
        #else
        guard ftruncate(fd, off_t(capacity)) == 0 else {
            let error = spoolError("can't size spool segment \(path)")
            close(fd)
            unlink(path)
            throw error
        }
        #endif
        let segment: SpoolSegment
        do {
            segment = try SpoolSegment(
                path: path,
                sequence: sequence,
                fd: fd,
                capacity: capacity,
                format: .current,
                throughFile: throughFile
            )
            // Not mapped (ENOMEM, a map count limit), or its header not written (through the file, a full disk): no
            // file of its size and reserved blocks is left behind.
            try segment.writeHeader()
        } catch {
            unlink(path)
            throw error
        }
        // Reusing a segment zeroes it through the mapping: one written through the file is deleted instead.
        segment.isRecyclable = !throughFile
        return segment
    }

    /// An empty segment's header: the magic, and no record yet.
    private func writeHeader() throws(JustLogError) {
        guard write(Self.magic, at: 0), commit(serial: 0) else {
            throw spoolError("can't write the header of spool segment \(path)")
        }
    }

    // MARK: - Reusing

    /// The name a retired segment's file has while it waits to be reused: not a segment's name, so recovery never
    /// reads it; one left by a crash is deleted when the folder is opened.
    static let spareFileName = "spare.tmp"

    /// Makes this segment — acknowledged, and out of the spool's list — the spool's spare: moves its file to
    /// ``spareFileName``, then zeroes what was written to it, so that reused it holds no record of its past (a
    /// restart would read them again otherwise). Returns `false`, having changed nothing, if the segment was not
    /// made by this process or its file can't be moved; then delete it.
    ///
    /// A spare costs neither its successor nor itself what a segment file costs the kernel: a new file's first
    /// write to each page takes a page fault that allocates and zeroes the page (on the logging caller's thread, a
    /// few microseconds a page), and deleting a file frees its pages.
    func retireAsSpare(directory: String) -> Bool {
        let sparePath = directory + "/" + Self.spareFileName
        guard isRecyclable, rename(path, sparePath) == 0 else { return false }
        path = sparePath
        memset(base, 0, end)
        end = format.headerSize
        recordCount = 0
        payloadBytes = 0
        firstReservedOffset = .max
        skips = [:]
        return true
    }

    /// Makes this spare (see ``retireAsSpare(directory:)``) segment `sequence`: moves its file to that segment's
    /// name and writes an empty segment's header. Throws, having changed nothing, if the file can't be moved.
    func reuse(directory: String, as sequence: UInt64) throws {
        let target = directory + "/" + Self.fileName(sequence)
        guard rename(path, target) == 0 else { throw spoolError("can't reuse spool segment \(path) as \(target)") }
        path = target
        self.sequence = sequence
        try writeHeader()
    }

    /// Maps an existing segment file; ``scan()`` then finds its records. Returns `nil` for a file too short to
    /// hold a header (a process killed between creating and sizing it, or a file truncated to nothing).
    /// `folderProbe` keeps, for the folder's next segments, what a file made in the folder to ask answered (see
    /// ``Spool/Configuration/SegmentWrites/throughFile(_:isNew:directory:folderProbe:)``).
    ///
    /// - Throws: ``SpoolOpenFailure`` if it can't be opened, its blocks reserved (see below) or it mapped.
    static func openExisting(
        directory: String,
        sequence: UInt64,
        writes: Spool.Configuration.SegmentWrites,
        folderProbe: inout Bool?
    ) throws(SpoolOpenFailure) -> SpoolSegment? {
        let path = directory + "/" + fileName(sequence)
        let fd = openReadWrite(path)
        guard fd >= 0 else { throw SpoolOpenFailure("can't open spool segment \(path)") }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let failure = SpoolOpenFailure("can't stat spool segment \(path)")
            close(fd)
            throw failure
        }
        let size = Int(info.st_size)
        // Not a regular file of one link (a hard link another user made to a file of this user's: records written
        // there would change it), or larger than any segment a spool makes (a sparse file of any size would have its
        // blocks reserved below and be mapped whole): moved aside, its records counted lost (review, helper-69).
        guard info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1, size <= Spool.maximumSegmentBytes else {
            close(fd)
            throw SpoolOpenFailure(
                JustLogError(
                    code: .spoolUnavailable,
                    message:
                        "spool segment \(path) is not a regular file of one link and at most \(Spool.maximumSegmentBytes) bytes (\(size) bytes, \(info.st_nlink) links)"
                ),
                lasts: true
            )
        }
        #if os(Linux)
        // Its blocks reserved before it is mapped, as ``create(directory:sequence:capacity:)`` reserves a new one's: a
        // segment found on disk may be sparse (a folder copied or restored without its holes filled), and on a full
        // disk a record copied into a hole of the mapping — on tmpfs, even a read of one — raises `SIGBUS`, killing
        // the program. Only a file with fewer blocks than its size is filled (some file systems reserve space for the
        // whole range before looking at what is allocated, and would fail a whole file on a nearly full disk). A full
        // disk here never moves the file aside (its records are whole): the spool opens once there is room. A file
        // system that can't reserve blocks at all is used as before.
        if Int(info.st_blocks) * 512 < size {
            _ = FileSizeLimit.failWritesInsteadOfKilling()  // glibc's fallback writes: a file-size limit would kill
            var reserved: Int32
            repeat { reserved = posix_fallocate(fd, 0, off_t(size)) } while reserved == EINTR
            if reserved != 0, reserved != EOPNOTSUPP, reserved != ENOSYS {
                close(fd)
                throw SpoolOpenFailure(
                    JustLogError(
                        code: .spoolUnavailable,
                        message: "can't reserve the blocks of spool segment \(path), which has holes",
                        cause: String(cString: strerror(reserved))
                    ),
                    lasts: SpoolOpenFailure.lasts(reserved)
                )
            }
        }
        #endif
        var header = [UInt8](repeating: 0, count: magic.count)
        if size >= header.count {
            _ = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, magic.count, 0) }
        }
        // A newer version's segment (after a downgrade): see ``newerVersionFailure(path:)``.
        if Format.newerVersion(magic: header) != nil {
            close(fd)
            throw newerVersionFailure(path: path) ?? SpoolOpenFailure("spool segment \(path) changed while opened")
        }
        // An unknown magic (a damaged header, or one never written): framed; ``scan()`` tells which checksum.
        let format = Format(magic: header) ?? .current
        guard size > format.headerSize else {
            close(fd)
            return nil
        }
        do {
            return try SpoolSegment(
                path: path,
                sequence: sequence,
                fd: fd,
                capacity: size,
                format: format,
                throughFile: writes.throughFile(fd, isNew: false, directory: directory, folderProbe: &folderProbe)
            )
        } catch {
            throw SpoolOpenFailure(error, lasts: SpoolOpenFailure.lasts(errno))
        }
    }

    /// Why the segment at `path` may not be opened, if a newer version of JustLog wrote it (after a downgrade): not
    /// this version's to read, nor to write over. The spool does not open (as on a full disk, its records wait
    /// whole), and the newer version finds them intact. (A header damaged into exactly a newer magic, one byte's
    /// bit, is taken for one too: the spool stays closed, and the message says that case.)
    static func newerVersionFailure(path: String) -> SpoolOpenFailure? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: magic.count)
        guard header.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, magic.count, 0) }) == magic.count,
            let newer = Format.newerVersion(magic: header)
        else { return nil }
        return SpoolOpenFailure(
            JustLogError(
                code: .spoolUnavailable,
                message:
                    "spool segment \(path) was written by a newer version of JustLog (format \(newer)), which this version can't read; the folder is left as it is: run the newer version, or move the folder aside (if no newer version ever used it, the segment's header is damaged: move that file aside)"
            ),
            lasts: false
        )
    }

    private init(
        path: String,
        sequence: UInt64,
        fd: CInt,
        capacity: Int,
        format: Format,
        throughFile: Bool
    ) throws(JustLogError) {
        // Read-only when written through the file: a write into the mapping missed there faults at once, in tests,
        // instead of on a user's full disk.
        let protection = throughFile ? PROT_READ : PROT_READ | PROT_WRITE
        guard let mapping = mmap(nil, capacity, protection, MAP_SHARED, fd, 0),
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
        self.format = format
        self.base = mapping
        self.writesThroughFile = throughFile
        self.end = format.headerSize
        self.recordCount = 0
        self.payloadBytes = 0
    }

    deinit {
        munmap(base, capacity)
        close(fd)
    }

    // MARK: - Appending

    /// Writes `bytes` at `offset`: into the mapping, or with `pwrite` when the segment is written through the file.
    /// Returns whether every byte was written.
    func write(_ bytes: [UInt8], at offset: Int) -> Bool {
        bytes.withUnsafeBytes { raw in
            guard writesThroughFile else {
                (base + offset).copyMemory(from: raw.baseAddress!, byteCount: raw.count)
                return true
            }
            return Self.writeAll(fd, raw, at: offset)
        }
    }

    /// `pwrite(2)` of all of `bytes` at `offset` (a write the kernel cut short is finished; one interrupted is tried
    /// again). Returns whether every byte was written; `errno` says why not.
    private static func writeAll(_ fd: CInt, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let written = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if written > 0 {
                done += written
            } else if written < 0, errno == EINTR {
                continue
            } else {
                if written == 0 { errno = EIO }
                return false
            }
        }
        return true
    }

    /// `true` if a record of `payloadCount` bytes fits after ``end``.
    func fits(_ payloadCount: Int) -> Bool {
        isAppendable && end + Self.frameHeaderSize + payloadCount <= capacity
    }

    /// Reserves the frame after ``end`` for a record of `payloadCount` bytes (it ``fits(_:)``) whose caller copies it
    /// in with ``fill(_:with:)`` — at once (an append, under the spool's lock) or once the lock is released (a
    /// ``SpoolReservation``); returns where the frame starts. Writes the
    /// frame's stub — length, serial and their check, then the reserved magic — and then the header's last serial:
    /// a crash before the fill leaves a stub that recovery skips (see the type's discussion). The frame counts as
    /// appended from now on (``end``, ``recordCount``); readers wait for its commit mark (``isCommitted(at:)``).
    @inline(__always)
    func reserve(_ payloadCount: Int, serial: UInt64) -> UnsafeMutableRawPointer {
        assert(!writesThroughFile, "a segment written through the file has no place to fill after the lock")
        let frame = base + end
        frame.storeBytes(of: UInt32(payloadCount).littleEndian, toByteOffset: 4, as: UInt32.self)
        frame.storeBytes(of: serial.littleEndian, toByteOffset: 8, as: UInt64.self)
        frame.storeBytes(
            of: Self.reservationCheck(length: payloadCount, serial: serial).littleEndian,
            toByteOffset: 16,
            as: UInt64.self
        )
        frame.storeBytes(of: Self.reservedMagic.littleEndian, toByteOffset: 0, as: UInt32.self)
        // Wrapping adds: all three stay below the segment's capacity.
        end &+= Self.frameHeaderSize &+ payloadCount
        recordCount &+= 1
        payloadBytes &+= payloadCount
        commitMapped(serial: serial)
        return frame
    }

    /// What a reserved frame's bytes 16‥24 hold until it is filled: tells a stub from damaged bytes that happen to
    /// start with the reserved magic.
    static func reservationCheck(length: Int, serial: UInt64) -> UInt64 {
        ~serial ^ (UInt64(truncatingIfNeeded: length) &* 0x9E37_79B9_7F4A_7C15)
    }

    /// Copies `payload` into the frame that ``reserve(_:serial:)`` returned (for exactly `payload.count` bytes), then
    /// its two checksums in one store, then — last, with release ordering — the commit mark: a reader that sees the
    /// mark sees the whole record; a process killed before the mark leaves a stub, or a record whose mark is
    /// missing, and recovery skips either (its call never returned). Needs no lock: nothing else writes the frame,
    /// and the caller keeps the segment mapped (``SpoolReservation``).
    static func fill(_ frame: UnsafeMutableRawPointer, with payload: UnsafeRawBufferPointer) {
        (frame + frameHeaderSize).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        // Both checksums in one call (the payload's, and ``committedHeaderChecksum(ofFrameAt:payloadCRC:)``'s).
        let checksums = CRC32C.frameChecksums(payload, header: frame, magic: frameMagic)
        frame.storeBytes(of: checksums.littleEndian, toByteOffset: 16, as: UInt64.self)
        cjustlog_atomic_store_release_u8(
            frame.assumingMemoryBound(to: UInt8.self),
            UInt8(truncatingIfNeeded: frameMagic)
        )
    }

    /// Appends a record of `payload` with `serial` after ``end`` (it ``fits(_:)``) to a segment written through the
    /// file (``writesThroughFile``), under the spool's lock, and returns where its frame starts: the frame's stub, the
    /// payload, the checksums, then the header's last serial, then the commit mark — five `pwrite`s. A
    /// process killed in between leaves a record whose mark is missing, which recovery skips (its call never
    /// returned). Throws, having appended nothing, if a write fails (a full disk where copy-on-write could not be
    /// turned off): the next record is written over what got written.
    @inline(never)
    func appendThroughFile(_ payload: UnsafeRawBufferPointer, serial: UInt64) throws -> Int {
        let offset = end
        var header = (UInt64(0), UInt64(0), UInt64(0))
        let written = withUnsafeMutableBytes(of: &header) { frame -> Bool in
            let frame = frame.baseAddress!
            // The stub first, as a reservation leaves it (see ``reserve(_:serial:)``), then the payload, then the
            // checksums over the stub's check: whatever a failed write leaves, a frame header that checks out with
            // its checksums always has its payload behind it — recovery skips a stub, or a frame without its mark,
            // as a call that never returned, and never counts it lost.
            frame.storeBytes(of: Self.reservedMagic.littleEndian, toByteOffset: 0, as: UInt32.self)
            frame.storeBytes(of: UInt32(payload.count).littleEndian, toByteOffset: 4, as: UInt32.self)
            frame.storeBytes(of: serial.littleEndian, toByteOffset: 8, as: UInt64.self)
            let check = Self.reservationCheck(length: payload.count, serial: serial)
            frame.storeBytes(of: check.littleEndian, toByteOffset: 16, as: UInt64.self)
            guard Self.writeAll(fd, UnsafeRawBufferPointer(start: frame, count: Self.frameHeaderSize), at: offset),
                Self.writeAll(fd, payload, at: offset + Self.frameHeaderSize)
            else { return false }
            let checksums = CRC32C.frameChecksums(payload, header: frame, magic: Self.frameMagic).littleEndian
            return withUnsafeBytes(of: checksums) { Self.writeAll(fd, $0, at: offset + 16) }
        }
        guard written, commit(serial: serial),
            withUnsafeBytes(of: UInt8(truncatingIfNeeded: Self.frameMagic), { Self.writeAll(fd, $0, at: offset) })
        else {
            throw spoolError("can't write a record to spool segment \(path)")
        }
        end = offset + Self.frameHeaderSize + payload.count
        recordCount += 1
        payloadBytes += payload.count
        return offset
    }

    /// The checksum a reserved frame's header has once it is committed — of the frame magic, the length and serial
    /// the frame holds, and `payloadCRC` — computed on a copy: the frame does not hold the frame magic yet. The
    /// same code lays it out as the fill's (``CRC32C/frameChecksums(_:header:magic:)``).
    @inline(__always)
    static func committedHeaderChecksum(ofFrameAt frame: UnsafeRawPointer, payloadCRC: UInt32) -> UInt32 {
        CRC32C.committedHeaderChecksum(header: frame, magic: frameMagic, payloadCRC: payloadCRC)
    }

    /// Whether the record at `offset` (a frame start before ``end``) is complete: not a reserved frame still being
    /// filled. Read with acquire ordering: if so, the record's bytes may be read.
    func isCommitted(at offset: Int) -> Bool {
        guard format.isFramed else { return true }
        return cjustlog_atomic_load_acquire_u8((base + offset).assumingMemoryBound(to: UInt8.self))
            != Self.reservedMark
    }

    /// Waits until every place reserved from `offset` (a frame boundary) to ``end`` is filled — its commit mark
    /// set, loaded with acquire ordering: the filler's last write to the segment. Yields the processor meanwhile;
    /// calls `onWaiting` once, before the first wait, if there is one.
    func waitUntilFilled(from offset: Int, onWaiting: (() -> Void)? = nil) {
        guard format.isFramed, firstReservedOffset < end else { return }
        var position = frameStart(max(offset, firstReservedOffset))
        var waited = false
        while position < end {
            while !isCommitted(at: position) {
                if !waited {
                    waited = true
                    onWaiting?()
                }
                sched_yield()
            }
            position = nextFrame(after: position)
        }
    }

    /// Records `serial` as the last one appended, with its complement. Returns whether it was written (always, into
    /// the mapping).
    private func commit(serial: UInt64) -> Bool {
        guard writesThroughFile else {
            commitMapped(serial: serial)
            return true
        }
        let words = (serial.littleEndian, (~serial).littleEndian)
        return withUnsafeBytes(of: words) { Self.writeAll(fd, $0, at: 8) }
    }

    /// ``commit(serial:)`` into the mapping (every log call's: inlined).
    @inline(__always)
    private func commitMapped(serial: UInt64) {
        base.storeBytes(of: serial.littleEndian, toByteOffset: 8, as: UInt64.self)
        base.storeBytes(of: (~serial).littleEndian, toByteOffset: 16, as: UInt64.self)
    }

    /// The serials of the segment's records, first to last as its first frame and its header say; `nil` if it has
    /// none, or the legacy format, or a damaged header.
    var serials: Range<UInt64>? {
        guard recordCount > 0, let last = committedSerial, let first = serial(at: frameStart(firstFrameOffset)),
            first <= last
        else { return nil }
        return first..<(last + 1)
    }

    /// The serial of the last record appended, as the header says, or `nil` if the header is damaged (or the
    /// segment has the legacy format).
    var committedSerial: UInt64? {
        guard format.isFramed else { return nil }
        let serial = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        let check = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        return check == ~serial && serial <= Self.largestNumber ? serial : nil
    }

    // MARK: - Reading

    /// `offset`, or where the next intact record starts if a damaged stretch starts at `offset`.
    func frameStart(_ offset: Int) -> Int {
        // Hashing the offset for every record cost ~100 instructions; almost no segment has a damaged stretch.
        skips.isEmpty ? offset : skips[offset] ?? offset
    }

    /// The payload length of the intact record at `offset` (a frame start before ``end``).
    func recordLength(at offset: Int) -> Int {
        let field = format == .legacy ? 0 : 4
        return Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + field, as: UInt32.self)))
    }

    /// The serial of the intact record at `offset`, `nil` in a legacy segment.
    func serial(at offset: Int) -> UInt64? {
        guard format.isFramed else { return nil }
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
    }

    /// The payload of the intact record at `offset`.
    func payload(at offset: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + offset + format.frameHeaderSize, count: recordLength(at: offset))
    }

    /// Where the record after the one at `offset` starts (damaged stretches jumped).
    func nextFrame(after offset: Int) -> Int {
        frameStart(offset + format.frameHeaderSize + recordLength(at: offset))
    }

    /// Counts records and payload bytes from `offset` (a frame boundary) to `limit` (another one).
    func count(from offset: Int, to limit: Int) -> (records: Int, bytes: Int) {
        var records = 0
        var bytes = 0
        var position = frameStart(offset)
        let stop = min(limit, end)
        while position < stop {
            records += 1
            bytes += recordLength(at: position)
            position = nextFrame(after: position)
        }
        return (records, bytes)
    }

    /// Whether `offset` is a place a reader may stand: a record's start, a damaged stretch's start, or ``end``.
    func isBoundary(_ offset: Int) -> Bool {
        var position = firstFrameOffset
        while position < end, position <= offset {
            let start = frameStart(position)
            if position == offset || start == offset { return true }
            position = start + format.frameHeaderSize + recordLength(at: start)
        }
        return offset == end
    }

    /// Deletes the file (the mapping goes with the last reference).
    func remove() {
        unlink(path)
    }
}

/// `open(2)` for an existing file, read-write.
private func openReadWrite(_ path: String) -> CInt {
    open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
}

/// A spool file that could not be opened (a segment, the cursor), and whether that lasts: the spool then moves the
/// file aside rather than staying closed for good (see `SpoolStorage`). A failure that may pass — too many open
/// files, no memory, a full or read-only disk — is the open's error instead: moving the file aside for it would lose
/// records that are whole.
struct SpoolOpenFailure: Error {
    let error: JustLogError
    let lasts: Bool

    init(_ error: JustLogError, lasts: Bool) {
        self.error = error
        self.lasts = lasts
    }

    /// A failed system call's: `errno` says what, and whether it lasts.
    init(_ message: String) {
        let code = errno
        self.init(spoolError(message), lasts: Self.lasts(code))
    }

    /// Whether a failure with `errno` `code` lasts: the file itself is the problem (no permission, a folder in its
    /// place, a file the system can't map, an I/O error), not the process or the disk for now.
    static func lasts(_ code: Int32) -> Bool {
        ![EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN, EROFS, ENOSPC, EDQUOT, EFBIG, ETXTBSY].contains(code)
    }
}

/// A ``JustLogError`` for a failed system call, with `errno`'s description as the cause.
func spoolError(_ message: String) -> JustLogError {
    JustLogError(code: .spoolUnavailable, message: message, cause: String(cString: strerror(errno)))
}

/// `close(2)`, for types that have a `close()` of their own.
func closeDescriptor(_ fd: CInt) {
    _ = close(fd)
}
