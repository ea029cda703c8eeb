import CJustLogAtomics

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The files of an open spool folder — segments, cursor, lock — and the counters. Opening it recovers what
/// an earlier run left (see ``SpoolRecovery``). Not thread-safe: ``Spool`` guards it with its lock.
///
/// Its state is touched only under that lock, one access at a time: `@exclusivity(unchecked)` spares each access
/// the run-time exclusivity check (a log call appends here; the checks cost it about 80 instructions).
final class SpoolStorage {
    let configuration: Spool.Configuration
    /// Live segments, oldest first; the last one is the one being appended to. Never empty.
    @exclusivity(unchecked) private var segments: [SpoolSegment]
    @exclusivity(unchecked) private(set) var cursor: SpoolPosition
    /// A retired segment, zeroed, that the next segment reuses instead of a new file (see
    /// ``SpoolSegment/retireAsSpare(directory:)``); at most one.
    @exclusivity(unchecked) private var spare: SpoolSegment?
    /// Segments wholly acknowledged but before a cursor the cursor file could not be saved with, oldest first: their
    /// files stay (the next open starts from the cursor saved last, and sends them again rather than count them
    /// lost) until a cursor past them is saved, and they take their room under the cap meanwhile (see
    /// ``keepUntilACursorPastThemIsSaved(_:)``).
    @exclusivity(unchecked) private var retiredBeforeAnUnsavedCursor: [SpoolSegment] = []
    /// Whether deleting those at the cap was said (once for each bout of failing saves).
    @exclusivity(unchecked) private var reportedDeletingRetiredBeforeAnUnsavedCursor = false
    /// Why the last try at starting a segment failed, and when the next may be made (see
    /// ``Spool/Configuration/segmentRetryInterval``); `nil` while segments start.
    @exclusivity(unchecked) private var segmentStartFailure: RememberedFailure?
    /// The same for the last write of a record through the file (``SpoolSegment/writesThroughFile``) that failed: a
    /// full disk where copy-on-write could not be turned off refuses every record, not only a segment.
    @exclusivity(unchecked) private var writeFailure: RememberedFailure?
    /// A failure's error, and when the next try may be made.
    private typealias RememberedFailure = (error: any Error, retryAt: ContinuousClock.Instant)
    private let cursorFile: SpoolCursorFile
    /// Holds an exclusive `flock` on `<folder>/spool.lock` while open: one spool per folder, across
    /// processes and within one (two spools on one folder would write over each other's records).
    private let lockFD: CInt
    /// The folder, open and locked (`flock`) too — see `init`.
    private let folderFD: CInt
    @exclusivity(unchecked) private(set) var counters: SpoolCounters
    @exclusivity(unchecked) private var dropsToReport: UInt64 = 0
    @exclusivity(unchecked) private var lossesToReport: UInt64
    /// What recovery found lost in a number it can't know, one line each, not yet taken for a report.
    @exclusivity(unchecked) private var uncountedLossesToReport: [String]
    @exclusivity(unchecked) private var nextSerial: UInt64
    /// The newest segment and the serial the next record was to get when it became the newest, for the cursor file:
    /// the next open finds out from it whether the newest segments were deleted (see ``SpoolRecovery``).
    @exclusivity(unchecked) private var newest: SpoolCursorFile.Newest
    /// The highest segment number made, found or remembered (a deleted newest segment's too, as the cursor file
    /// names it): a new segment takes the next, not a number a segment had before. An open that finds the newest
    /// segment deleted starts the next one at once, so that the cursor file never names an older newest segment
    /// than one this run appends to (see the end of `init`). (Not found: a segment that only a cursor file of the
    /// format before the newest one points into.)
    @exclusivity(unchecked) private var highestSegmentNumber: UInt64
    private let maxSegments: Int
    private let diagnostics: DiagnosticSink
    /// Guards the cursor file's writes, which ``Spool/acknowledge(upTo:)`` makes outside the spool's lock (see
    /// ``write(_:)``), and the two values below.
    private let cursorWriteLock = ConditionLock()
    /// What was last written to the file (under `cursorWriteLock`): an older cursor, or an older newest segment, is
    /// not written over it.
    @exclusivity(unchecked) private var writtenCursor: PersistedCursor?
    @exclusivity(unchecked) private var cursorSaveFailed = false  // under `cursorWriteLock`

    // MARK: - Opening

    /// Opens the folder (creating it and its missing parents, owner-only), takes its lock (waiting up to
    /// `lockWait` for a holder that is letting go) and recovers the segments and cursor found there.
    init(configuration: Spool.Configuration, diagnostics: DiagnosticSink, lockWait: Duration) throws {
        self.configuration = configuration
        self.diagnostics = diagnostics
        self.maxSegments = configuration.maxSegments
        let directory = configuration.directory
        let inUse = JustLogError(
            code: .spoolUnavailable,
            message:
                "the spool folder \(directory) is in use by another logger or process; give each logger its own spool folder"
        )
        let folderFD = try Self.openAndLockFolder(directory, wait: lockWait, inUse: inUse, diagnostics: diagnostics)
        // And `spool.lock`, which earlier versions take alone.
        let lockFD = open(directory + "/spool.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard lockFD >= 0 else {
            let error = spoolError("can't open the spool lock in \(directory)")
            closeDescriptor(folderFD)
            throw error
        }
        guard lockExclusively(lockFD, wait: lockWait) else {
            closeDescriptor(lockFD)
            closeDescriptor(folderFD)
            throw inUse
        }
        self.lockFD = lockFD
        self.folderFD = folderFD
        var opened = false
        defer {
            if !opened {
                closeDescriptor(lockFD)
                closeDescriptor(folderFD)
            }
        }
        // Before anything is opened, moved aside or repaired: a folder a newer version of JustLog wrote (after a
        // downgrade) is not this version's to read, nor to change.
        let listing = try Self.listing(of: directory)
        for sequence in listing.segments {
            if let failure = SpoolSegment.newerVersionFailure(path: directory + "/" + SpoolSegment.fileName(sequence)) {
                throw failure.error
            }
        }

        // A file that can't be opened (made unreadable, a folder in its place, an I/O error) is moved aside rather
        // than keeping the whole spool closed for good: its records count as lost, as a missing segment's do, and a
        // cursor that can't be read sends again from the oldest record (the new, empty one says nothing). The
        // folder's lock is held: no other process uses these files.
        var setAside: [String] = []
        func reportSetAside() {
            for line in setAside { diagnostics.report("the \(configuration.name) in \(directory): \(line)") }
        }
        // Said even if the open fails later: the files were moved meanwhile.
        defer { if !opened { reportSetAside() } }
        let cursorPath = directory + "/cursor"
        let cursorFile: SpoolCursorFile
        do {
            cursorFile = try SpoolCursorFile(path: cursorPath)
        } catch let failure where failure.lasts {
            setAside.append(try Self.moveAside(cursorPath, because: failure.error))
            do { cursorFile = try SpoolCursorFile(path: cursorPath) } catch { throw error.error }
        } catch {
            throw error.error
        }
        defer { if !opened { cursorFile.close() } }

        // Segments, by sequence number; files too short for a header hold nothing.
        var entries: [(segment: SpoolSegment, scan: SegmentScan)] = []
        var emptied: [UInt64] = []
        var unopenable: [UInt64] = []
        // Asked of a new file in the folder once for all the folder's segments, where their own flags don't say.
        var folderProbe: Bool?
        // Left by a process killed while it asked (the folder's lock is held: no other process is asking).
        for probe in listing.leftoverProbes { unlink(directory + "/" + probe) }
        for sequence in listing.segments {
            let path = directory + "/" + SpoolSegment.fileName(sequence)
            let existing: SpoolSegment?
            do {
                existing = try SpoolSegment.openExisting(
                    directory: directory,
                    sequence: sequence,
                    writes: configuration.segmentWrites,
                    folderProbe: &folderProbe
                )
            } catch let failure where failure.lasts {
                setAside.append(try Self.moveAside(path, because: failure.error))
                unopenable.append(sequence)
                continue
            } catch {
                // Too many open files, a full disk…: the records are whole; the spool opens once that passes.
                throw error.error
            }
            if let segment = existing {
                entries.append((segment, segment.scan()))
            } else {
                emptied.append(sequence)
            }
        }
        let storedLedger = SpoolLossLedger.load(directory: directory)
        let recovery = SpoolRecovery(
            segments: entries,
            emptied: emptied,
            unopenable: unopenable,
            cursorFile: cursorFile.read(),
            ledger: storedLedger
        )

        var cursor = recovery.cursor
        var segments = entries.map(\.segment)
        var removed: [SpoolSegment] = []
        // Segments wholly before the cursor were acknowledged; segments without one intact record (other
        // than the newest) hold nothing that can be sent.
        while segments.count > 1, segments[0].sequence < cursor.segment {
            removed.append(segments.removeFirst())
        }
        for segment in segments.dropLast() where segment.recordCount == 0 {
            if cursor.segment == segment.sequence, let next = segments.first(where: { $0.sequence > segment.sequence })
            {
                cursor = SpoolPosition(segment: next.sequence, offset: next.firstFrameOffset)
            }
            removed.append(segment)
        }
        segments.removeAll { segment in removed.contains { $0 === segment } }
        var highestSegmentNumber = max(
            entries.last?.segment.sequence ?? 0,
            emptied.max() ?? 0,
            unopenable.max() ?? 0,
            recovery.cursor.segment,
            recovery.newestMadeSegment
        )
        if segments.isEmpty {
            let sequence = highestSegmentNumber + 1
            highestSegmentNumber = sequence
            let segment = try SpoolSegment.create(
                directory: directory,
                sequence: sequence,
                capacity: configuration.segmentBytes,
                writes: configuration.segmentWrites
            )
            segments.append(segment)
            cursor = SpoolPosition(segment: sequence, offset: segment.firstFrameOffset)
        }
        for segment in removed { segment.remove() }
        for sequence in emptied { unlink(directory + "/" + SpoolSegment.fileName(sequence)) }
        // A spare left by a crash may be half zeroed: not worth reusing.
        unlink(directory + "/" + SpoolSegment.spareFileName)

        self.segments = segments
        self.highestSegmentNumber = highestSegmentNumber
        self.cursor = cursor
        self.cursorFile = cursorFile
        self.nextSerial = recovery.nextSerial
        // Every record of an older segment, and every one this segment holds now, has a serial below the next.
        self.newest = SpoolCursorFile.Newest(
            segment: segments[segments.count - 1].sequence,
            nextSerial: recovery.nextSerial
        )
        self.lossesToReport = recovery.newlyLost
        self.uncountedLossesToReport = recovery.uncounted
        self.counters = SpoolCounters(
            queuedRecords: 0,
            queuedBytes: 0,
            segmentCount: segments.count,
            droppedRecords: 0,
            appendedRecords: 0
        )
        for segment in segments {
            let skipped =
                segment.sequence == cursor.segment
                ? segment.count(from: segment.firstFrameOffset, to: cursor.offset) : (records: 0, bytes: 0)
            counters.queuedRecords += segment.recordCount - skipped.records
            counters.queuedBytes += segment.payloadBytes - skipped.bytes + segment.recordCount - skipped.records
        }
        persistCursor()
        if recovery.ledger != storedLedger { recovery.ledger.save(directory: directory) }
        opened = true
        reportSetAside()
        report(recovery)
        // The newest segment is gone (deleted, emptied, moved aside): this run appends to a new one, numbered after
        // it, rather than into the room left in the one before. Else the cursor file would name that older segment as
        // the newest, and after a crash the next open would give the deleted one's number to a new segment, and
        // could not tell a torn tail of this run's records from the deleted segment's loss, reported already.
        // After the report and the ledger: a kill while the segment is made must not leave a newer segment that
        // hides the loss from the next open before it was said. (Not when the spool is at its count of segments:
        // that would drop records at the open.)
        if highestSegmentNumber > segments[segments.count - 1].sequence, segments.count < maxSegments {
            do {
                _ = try startSegment()
            } catch {
                diagnostics.report(
                    "the \(configuration.name) in \(directory) could not start a segment after the missing newest one (\(error)); records go on in \(SpoolSegment.fileName(segments[segments.count - 1].sequence))"
                )
            }
        }
    }

    /// Moves a spool file that can't be opened out of the spool's way (renamed `….unreadable`, or `….unreadable-N`
    /// if that name is taken: kept for a look) and says what happened, for the report. Throws if it can't be moved:
    /// left in place, it would be taken for a segment again (and written over by a new one of its number).
    private static func moveAside(_ path: String, because error: JustLogError) throws -> String {
        let name = String(path.split(separator: "/").last ?? Substring(path))
        let what = name == "cursor" ? "the cursor" : "segment \(name)"
        var target = path + ".unreadable"
        var attempt = 1
        while access(target, F_OK) == 0, attempt < 1000 {
            attempt += 1
            target = path + ".unreadable-\(attempt)"
        }
        guard rename(path, target) == 0 else {
            throw JustLogError(
                code: .spoolUnavailable,
                message: "\(what) could not be opened (\(error)) nor moved aside to \(target)",
                cause: String(cString: strerror(errno))
            )
        }
        let consequence =
            name == "cursor"
            ? "sending again from the oldest record kept, so some events may arrive twice"
            : "its records are lost (counted in the next line where the segments around it tell how many; putting the file back would not restore them)"
        return "\(what) could not be opened (\(error)); moved aside to \(target) and \(consequence)"
    }

    /// Says what the recovery found, on the diagnostics sink.
    private func report(_ recovery: SpoolRecovery) {
        let directory = configuration.directory
        if let problem = recovery.cursorProblem {
            diagnostics.report(
                "the \(configuration.name) cursor in \(directory) was damaged (\(problem)); sending again from the oldest record kept, so some events may arrive twice"
            )
        }
        if recovery.newlyLost > 0 {
            let places = recovery.newLosses.prefix(5).map { loss in
                let serials =
                    loss.count == 1
                    ? "serial \(loss.serials.lowerBound)"
                    : "serials \(loss.serials.lowerBound)–\(loss.serials.upperBound - 1)"
                return "\(loss.count) \(loss.place) (\(serials))"
            }
            let more = recovery.newLosses.count > 5 ? "; and \(recovery.newLosses.count - 5) more places" : ""
            diagnostics.report(
                "the \(configuration.name) in \(directory) was damaged: \(recovery.newlyLost) record(s) could not be read and are lost; every intact record is kept. Where: \(places.joined(separator: "; "))\(more)"
            )
        }
        for line in recovery.uncounted {
            diagnostics.report("the \(configuration.name) in \(directory) was damaged: \(line)")
        }
    }

    /// `mkdir -p` with owner-only permissions for every folder it creates.
    /// Makes the folder (owner-only) and its missing parents; `true` if it made the folder itself.
    @discardableResult
    private static func createFolder(_ path: String) throws -> Bool {
        if mkdir(path, 0o700) == 0 { return true }
        let code = errno
        if code == EEXIST { return false }
        let parent = String(path.reversed().drop(while: { $0 == "/" }).drop(while: { $0 != "/" }).reversed())
        guard code == ENOENT, !parent.isEmpty, parent != path else {
            errno = code
            throw spoolError("can't create spool folder \(path)")
        }
        try createFolder(parent)
        if mkdir(path, 0o700) == 0 { return true }
        if errno != EEXIST { throw spoolError("can't create spool folder \(path)") }
        return false
    }

    /// Creates the folder if missing, opens it (see ``openOwnFolder(_:created:diagnostics:)``) and takes its `flock`.
    ///
    /// The folder's own lock, besides `spool.lock`'s: a `spool.lock` deleted while held (a cleaner of old files in
    /// /tmp: its time never changes) let the next spool make a new one and take it — two spools writing one folder's
    /// files (review, helper-69). A file system that can't lock a folder leaves the file's lock alone to exclude, as
    /// before. A folder deleted by the holder meanwhile (``closeRemovingFolder(alsoRemoving:)``) is made again.
    private static func openAndLockFolder(
        _ directory: String,
        wait: Duration,
        inUse: JustLogError,
        diagnostics: DiagnosticSink
    ) throws -> CInt {
        for _ in 0..<3 {
            let created = try createFolder(directory)
            // `nil`: deleted (by its holder) between the `mkdir` and the open — made again.
            guard let folderFD = try openOwnFolder(directory, created: created, diagnostics: diagnostics) else {
                continue
            }
            if !lockExclusively(folderFD, wait: wait), errno == EWOULDBLOCK || errno == EINTR {
                closeDescriptor(folderFD)
                throw inUse
            }
            var held = stat()
            var named = stat()
            if fstat(folderFD, &held) == 0, stat(directory, &named) == 0, held.st_dev == named.st_dev,
                held.st_ino == named.st_ino
            {
                return folderFD
            }
            closeDescriptor(folderFD)
        }
        throw JustLogError(
            code: .spoolUnavailable,
            message: "the spool folder \(directory) was deleted and made again three times while it was being opened"
        )
    }

    /// Opens the folder (`O_RDONLY`; `nil` if it is not there), making sure that no other user can put files in it: such a user could plant
    /// files named as the spool's — a link as the cursor or a segment had this program overwrite or truncate the file
    /// it pointed to, a file of theirs got the records (review, helper-69: a folder made ahead in a shared log
    /// folder did both).
    ///
    /// - A symbolic link is followed only if this user or root made it (a folder kept on another disk).
    /// - A folder found (not made now) that belongs to another user is refused, unless this program is root's (a
    ///   volume a user owns, an NFS export that squashes root: root's own folders belong to `nobody` there).
    /// - A folder others can write in (made with umask 002, a Kubernetes volume's group permissions) is made
    ///   owner-only; where its mode can't change (a FAT or Windows file system, which keeps none) it is used, and
    ///   that is said once.
    /// Files in it are opened without following links, and a segment that is not a regular file of one link is
    /// moved aside (see ``SpoolSegment/openExisting(directory:sequence:writes:folderProbe:)``).
    private static func openOwnFolder(_ path: String, created: Bool, diagnostics: DiagnosticSink) throws -> CInt? {
        var link = stat()
        guard lstat(path, &link) == 0 else {
            if errno == ENOENT { return nil }
            throw spoolError("can't inspect spool folder \(path)")
        }
        let user = geteuid()
        if link.st_mode & S_IFMT == S_IFLNK, link.st_uid != user, link.st_uid != 0 {
            throw refused(path, "is a symbolic link another user (uid \(link.st_uid)) made")
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw spoolError("can't open spool folder \(path)")
        }
        var kept = false
        defer { if !kept { closeDescriptor(fd) } }
        var folder = stat()
        guard fstat(fd, &folder) == 0 else { throw spoolError("can't inspect spool folder \(path)") }
        if !created, folder.st_uid != user, user != 0 {
            throw refused(path, "belongs to another user (uid \(folder.st_uid); this program runs as uid \(user))")
        }
        if folder.st_mode & 0o022 != 0 {
            _ = fchmod(fd, mode_t(folder.st_mode & 0o7777 & ~0o022))
            var after = stat()
            if fstat(fd, &after) == 0, after.st_mode & 0o022 != 0 {
                diagnostics.reportOnce(
                    key: "spool.folder.mode.\(path)",
                    "the spool folder \(path) can be written by other users (mode \(String(after.st_mode & 0o777, radix: 8))) and its mode can't be changed (a file system that keeps none?): another user there could plant files that take its records"
                )
            }
        }
        kept = true
        return fd
    }

    private static func refused(_ path: String, _ why: String) -> JustLogError {
        JustLogError(
            code: .spoolUnavailable,
            message:
                "the spool folder \(path) \(why); it is not used, for another user could plant links to other files there and have them overwritten or read"
        )
    }

    /// The sequence numbers of the segment files in `directory`, in order, and the names of the files a copy-on-write
    /// probe left there (see ``Spool/Configuration/SegmentWrites/probeNamePrefix``).
    private static func listing(of directory: String) throws -> (segments: [UInt64], leftoverProbes: [String]) {
        guard let names = directoryEntries(directory) else { throw spoolError("can't list spool folder \(directory)") }
        let sequences = names.compactMap(SpoolSegment.sequence(inFileName:))
        let probes = names.filter { $0.hasPrefix(Spool.Configuration.SegmentWrites.probeNamePrefix) }
        return (sequences.sorted(), probes)
    }

    /// Closes the spool and deletes its files and its folder, the locks held until the folder is gone (a spool
    /// opening it meanwhile waits, then makes it again): for a folder no logger writes any more, whose records are
    /// all acknowledged (the caller checks). Only the spool's own files and those `alsoRemoving` names are deleted;
    /// anything else — a file moved aside — keeps the folder.
    func closeRemovingFolder(alsoRemoving: (String) -> Bool) {
        releaseFiles()
        let directory = configuration.directory
        let own: Set = [
            "cursor", SpoolLossLedger.fileName, SpoolLossLedger.fileName + ".tmp", SpoolSegment.spareFileName,
        ]
        for name in directoryEntries(directory) ?? []
        where own.contains(name) || SpoolSegment.sequence(inFileName: name) != nil
            || name.hasPrefix(Spool.Configuration.SegmentWrites.probeNamePrefix) || alsoRemoving(name)
        {
            unlink(directory + "/" + name)
        }
        unlink(directory + "/spool.lock")
        rmdir(directory)
        closeLocks()
    }

    /// Unmaps and closes the files, once no reserved place is being filled. Records stay on disk for the next spool
    /// opened on the folder.
    func close() {
        releaseFiles()
        closeLocks()
    }

    /// Unmaps and closes the segments and the cursor file, once no reserved place is being filled; deletes the spare.
    private func releaseFiles() {
        waitForFills(in: segments)
        segments.removeAll()
        retiredBeforeAnUnsavedCursor.removeAll()  // unmapped; the files stay for the next open
        spare?.remove()
        spare = nil
        cursorFile.close()
    }

    /// Lets go of the folder: its `spool.lock` and its own lock.
    private func closeLocks() {
        closeDescriptor(lockFD)
        closeDescriptor(folderFD)
    }

    // MARK: - Appending

    /// Appends one record (already checked: not empty, not too large) and returns its position and the position
    /// just after it.
    func append(_ record: UnsafeRawBufferPointer) throws -> (start: SpoolPosition, end: SpoolPosition) {
        let (start, frame, end, isWritten) = try takePlace(record, reserving: false)
        if !isWritten { SpoolSegment.fill(frame, with: record) }
        return (start, end)
    }

    /// Reserves the place of `record` (already checked: not empty, not too large) for the caller to copy it in after
    /// the spool's lock is released: see ``SpoolReservation`` — or, in a segment written through the file, writes it
    /// now (the place says so: ``SpoolReservation/Place/isWritten``). Inlined into the fast lane's one caller
    /// (``Spool/reserveRecord(_:whileQueuedBytesBelow:)``), with the segment's stub: a call less on every log call.
    @inline(__always)
    func reserve(_ record: UnsafeRawBufferPointer) throws -> SpoolReservation.Place {
        let (start, frame, end, isWritten) = try takePlace(record, reserving: true)
        return SpoolReservation.Place(start: start, end: end, frame: frame, count: record.count, isWritten: isWritten)
    }

    /// The frame of the next record, `record`, reserved in the last segment (or a new one): the serial, the
    /// counters and the frame's stub (``SpoolSegment/reserve(_:serial:)``); the caller fills it — after the spool's
    /// lock when `reserving` (noted in the segment, for ``waitForFills(in:)``). In a segment written through the file
    /// the record is written now instead (``SpoolSegment/appendThroughFile(_:serial:)``), and `isWritten` says so (the
    /// frame is then in the read-only mapping).
    @inline(__always)
    private func takePlace(
        _ record: UnsafeRawBufferPointer,
        reserving: Bool
    ) throws -> (start: SpoolPosition, frame: UnsafeMutableRawPointer, end: SpoolPosition, isWritten: Bool) {
        let count = record.count
        // Unretained (an append spares a retain and a release): `segments` holds the segment throughout.
        var last = Unmanaged.passUnretained(segments[segments.count - 1])
        if !last._withUnsafeGuaranteedRef({ $0.fits(count) }) {
            last = .passUnretained(try startSegment())
        }
        if last._withUnsafeGuaranteedRef({ $0.writesThroughFile }) {
            return try appendThroughFile(record, to: last.takeUnretainedValue())
        }
        let serial = nextSerial
        let place = last._withUnsafeGuaranteedRef { segment in
            let start = SpoolPosition(segment: segment.sequence, offset: segment.end)
            if reserving { segment.firstReservedOffset = min(segment.firstReservedOffset, start.offset) }
            let frame = segment.reserve(count, serial: serial)
            return (start, frame, SpoolPosition(segment: segment.sequence, offset: segment.end), false)
        }
        countAppended(count)
        return place
    }

    /// ``takePlace(_:reserving:)`` in a segment written through the file: `record` is written now, or nothing is
    /// (the write throws) — and, within ``Spool/Configuration/segmentRetryInterval`` of a write that failed, nothing
    /// is tried: that write's error is thrown again without a system call. Out of line: the mapped path is every log
    /// call's.
    @inline(never)
    private func appendThroughFile(
        _ record: UnsafeRawBufferPointer,
        to segment: SpoolSegment
    ) throws -> (start: SpoolPosition, frame: UnsafeMutableRawPointer, end: SpoolPosition, isWritten: Bool) {
        if let error = pending(writeFailure) { throw error }
        let start = SpoolPosition(segment: segment.sequence, offset: segment.end)
        let offset: Int
        do {
            offset = try segment.appendThroughFile(record, serial: nextSerial)
            writeFailure = nil
        } catch {
            writeFailure = remembering(error)
            throw error
        }
        countAppended(record.count)
        return (start, segment.base + offset, SpoolPosition(segment: segment.sequence, offset: segment.end), true)
    }

    /// Counts a record of `count` bytes appended, and gives the next one the next serial.
    @inline(__always)
    private func countAppended(_ count: Int) {
        // Wrapping adds: each is bounded far below its type's range (records and bytes the spool holds, a serial
        // a record), and an overflow check on each cost every log call its branch.
        nextSerial &+= 1
        counters.queuedRecords &+= 1
        counters.queuedBytes &+= count &+ 1
        counters.appendedRecords &+= 1
    }

    /// Whether a record of `count` bytes would be appended now without dropping records not yet acknowledged at the
    /// cap: it fits in the last segment, or starting a segment for it drops none (the spool is below its cap, or exactly
    /// at it with the oldest segment wholly acknowledged — its end reached, not yet retired while the cursor stays in
    /// it: see ``dropsOnlyAcknowledged``).
    @inline(__always)
    func takesWithoutDropping(_ count: Int) -> Bool {
        segments.count < maxSegments || segments[segments.count - 1].fits(count) || dropsOnlyAcknowledged
    }

    /// Whether starting a segment now drops only the oldest, every record of which is acknowledged (the cursor rests
    /// at its end): the spool is exactly at its cap — one reopened with a smaller cap may be past it, and would drop
    /// more than one.
    @inline(never)
    private var dropsOnlyAcknowledged: Bool {
        segments.count == maxSegments && segments.count > 1 && cursor.segment == segments[0].sequence
            && cursor.offset >= segments[0].end
    }

    /// Whether a record of `count` bytes may be appended now while the records not yet acknowledged take fewer than
    /// `limit` bytes: they do, and it drops nothing (``takesWithoutDropping(_:)``). The one condition
    /// ``Spool/reserveRecord(_:whileQueuedBytesBelow:)`` reserves under and ``Spool/room(for:whileQueuedBytesBelow:)``
    /// reports: a caller told to wait for room waits for exactly what reserving needs.
    @inline(__always)
    func hasRoom(for count: Int, whileQueuedBytesBelow limit: Int) -> Bool {
        counters.queuedBytes < limit && takesWithoutDropping(count)
    }

    /// Waits (lock held) until every place reserved in `segments` is filled: before a segment that may hold one is
    /// unmapped — only when the oldest segment is dropped at the cap, or the spool closed. A fill takes microseconds
    /// and needs no lock; a filler's thread that was preempted makes this wait longer.
    ///
    /// The frames are walked — from the cursor (a reader stops at a place not filled, so none is acknowledged) and
    /// from the segment's first reservation by this spool (none in a spool that only appends; a stub before it was
    /// left by a process that was killed, and is never filled) — instead of counting the places in flight: a count
    /// is an atomic increment and decrement on every log call, on a word both logging threads write (BENCHMARKS
    /// part 20).
    private func waitForFills(in segments: some Sequence<SpoolSegment>) {
        for segment in segments where segment.sequence >= cursor.segment {
            segment.waitUntilFilled(
                from: segment.sequence == cursor.segment ? cursor.offset : segment.firstFrameOffset,
                onWaiting: configuration.onWaitingForAFill
            )
        }
    }

    /// Whether appending a record of `count` bytes would throw a remembered failure's error: the last segment is
    /// written through the file and the last write failed, or the record needs a segment (it does not fit the last)
    /// and the last try to start one failed — within ``Spool/Configuration/segmentRetryInterval``.
    func waitsForARetry(toAppend count: Int) -> Bool {
        let last = segments[segments.count - 1]
        // A write refused through the file refuses every record, one that would start a segment too (see
        // ``startSegment()``).
        if last.writesThroughFile, pending(writeFailure) != nil { return true }
        return !last.fits(count) && pending(segmentStartFailure) != nil
    }

    /// The error of `failure` while its retry is not due (see ``Spool/Configuration/segmentRetryInterval``).
    private func pending(_ failure: RememberedFailure?) -> (any Error)? {
        guard let failure, configuration.now() < failure.retryAt else { return nil }
        return failure.error
    }

    /// `error`, to be thrown again without a try until ``Spool/Configuration/segmentRetryInterval`` has passed; `nil`
    /// without an interval (every append tries).
    private func remembering(_ error: any Error) -> RememberedFailure? {
        configuration.segmentRetryInterval.map { (error, configuration.now().advanced(by: $0)) }
    }

    /// Opens the next segment (``startSegmentNow()``) — or, within ``Spool/Configuration/segmentRetryInterval`` of
    /// a try that failed, throws what that one did.
    private func startSegment() throws -> SpoolSegment {
        // Nor after a write the disk refused (a segment written through the file): the record that needs a segment
        // would be refused the same way, after the segment had started (and the oldest, at the cap, been dropped).
        if let error = pending(segmentStartFailure) ?? pending(writeFailure) { throw error }
        configuration.onStartingASegment?()
        do {
            let segment = try startSegmentNow()
            segmentStartFailure = nil
            return segment
        } catch {
            segmentStartFailure = remembering(error)
            throw error
        }
    }

    /// Opens the next segment, first deleting the oldest if the spool is at its cap, and writes the cursor file, which
    /// names it as the newest (one `pwrite`; a segment starts once per ``Spool/Configuration/segmentBytes``).
    private func startSegmentNow() throws -> SpoolSegment {
        if !retiredBeforeAnUnsavedCursor.isEmpty, segments.count + retiredBeforeAnUnsavedCursor.count >= maxSegments {
            deleteRetiredSegmentsAtTheCap()
        }
        while segments.count >= maxSegments {
            dropOldestSegment()
        }
        let sequence = max(segments[segments.count - 1].sequence, highestSegmentNumber) + 1
        let segment =
            try reusedSpare(as: sequence)
            ?? SpoolSegment.create(
                directory: configuration.directory,
                sequence: sequence,
                capacity: configuration.segmentBytes,
                writes: configuration.segmentWrites
            )
        // Once the segment exists: a failed start is tried again with the same number.
        highestSegmentNumber = sequence
        segments.append(segment)
        counters.segmentCount = segments.count
        newest = SpoolCursorFile.Newest(segment: sequence, nextSerial: nextSerial)
        persistCursor()
        return segment
    }

    /// The spare, made segment `sequence`, if there is one and its file could be moved (else it is deleted).
    private func reusedSpare(as sequence: UInt64) -> SpoolSegment? {
        guard let spare else { return nil }
        self.spare = nil
        do {
            try spare.reuse(directory: configuration.directory, as: sequence)
            return spare
        } catch {
            spare.remove()
            return nil
        }
    }

    /// Whether a retired segment would be kept as the spare (there is none).
    var wantsSpare: Bool { spare == nil }

    /// Keeps `segment`, made a spare by ``SpoolSegment/retireAsSpare(directory:)``, for the next segment to reuse;
    /// `false` if there is a spare already (then delete `segment`).
    func keepSpare(_ segment: SpoolSegment) -> Bool {
        guard spare == nil else { return false }
        spare = segment
        return true
    }

    /// At the cap, the segments kept for a cursor that could not be saved give their room before any record not yet
    /// acknowledged is dropped: all of them if the cursor can be saved now; else the oldest ones, until a segment
    /// may start — their records were delivered, but the next open starts from the cursor saved last and finds them
    /// gone: their serials go into the loss ledger first (``SpoolLossLedger``), so that it does not count them lost.
    /// If the ledger can't be saved either, it will (over-counted, never silent; this says so once).
    private func deleteRetiredSegmentsAtTheCap() {
        if write(persistedCursor) {
            for segment in retiredBeforeAnUnsavedCursor { segment.remove() }
            retiredBeforeAnUnsavedCursor.removeAll()
            reportedDeletingRetiredBeforeAnUnsavedCursor = false
            return
        }
        var deleted: [SpoolSegment] = []
        while !retiredBeforeAnUnsavedCursor.isEmpty,
            segments.count + retiredBeforeAnUnsavedCursor.count >= maxSegments
        {
            deleted.append(retiredBeforeAnUnsavedCursor.removeFirst())
        }
        let directory = configuration.directory
        let serials = deleted.compactMap(\.serials)
        let saved = SpoolLossLedger.add(serials, directory: directory)
        // A segment whose header is damaged has no serials to mark: the next open may count its records lost.
        let marked = saved && serials.count == deleted.count
        if !reportedDeletingRetiredBeforeAnUnsavedCursor {
            reportedDeletingRetiredBeforeAnUnsavedCursor = true
            let restart =
                marked
                ? "a restart sends again what is after the cursor saved last"
                : "after a restart they may be counted lost (the loss ledger can't be saved, or a segment's header is damaged)"
            diagnostics.report(
                "the \(configuration.name) in \(directory) is at its cap while its cursor can't be saved: deleting segments whose events were sent; \(restart)"
            )
        }
        for segment in deleted { segment.remove() }
    }

    /// Keeps `retired` — segments wholly before a cursor that ``write(_:)`` could not save — on disk and under the
    /// cap until a cursor past them is saved (``takeRetiredBeforeAnUnsavedCursor()``) or the cap needs their room.
    func keepUntilACursorPastThemIsSaved(_ retired: [SpoolSegment]) {
        retiredBeforeAnUnsavedCursor += retired
    }

    /// Whether segments are kept by ``keepUntilACursorPastThemIsSaved(_:)``.
    var keepsRetiredBeforeAnUnsavedCursor: Bool { !retiredBeforeAnUnsavedCursor.isEmpty }

    /// The segments kept by ``keepUntilACursorPastThemIsSaved(_:)``, taken out: once a cursor past them is saved, the
    /// caller deletes them.
    func takeRetiredBeforeAnUnsavedCursor() -> [SpoolSegment] {
        guard !retiredBeforeAnUnsavedCursor.isEmpty else { return [] }
        defer {
            retiredBeforeAnUnsavedCursor.removeAll()
            // Saves work again: a later bout of failing ones is said again.
            reportedDeletingRetiredBeforeAnUnsavedCursor = false
        }
        return retiredBeforeAnUnsavedCursor
    }

    /// Deletes the oldest segment, counting its unacknowledged records as dropped.
    private func dropOldestSegment() {
        // A place reserved in it may still be being filled (its thread preempted while this many segments filled).
        waitForFills(in: segments.prefix(1))
        let oldest = segments.removeFirst()
        var lost = (records: oldest.recordCount, bytes: oldest.payloadBytes)
        if oldest.sequence == cursor.segment {
            if cursor.offset >= oldest.end {
                // Wholly acknowledged (see ``dropsOnlyAcknowledged``): nothing lost, and no frame to walk.
                lost = (0, 0)
            } else {
                let acknowledged = oldest.count(from: oldest.firstFrameOffset, to: cursor.offset)
                lost = (lost.records - acknowledged.records, lost.bytes - acknowledged.bytes)
            }
        }
        if cursor.segment <= oldest.sequence {
            cursor = SpoolPosition(segment: segments[0].sequence, offset: segments[0].firstFrameOffset)
            // Not saved: the next open starts from the cursor saved last and finds these records gone — counted
            // here as dropped, they would be counted again as lost; their serials go into the loss ledger first
            // (review, helper-42). If that can't be saved either, they will be (over-counted, never silent).
            if !write(persistedCursor), let serials = oldest.serials {
                _ = SpoolLossLedger.add([serials], directory: configuration.directory)
            }
        }
        counters.queuedRecords -= lost.records
        counters.queuedBytes -= lost.bytes + lost.records
        counters.droppedRecords += UInt64(lost.records)
        dropsToReport += UInt64(lost.records)
        oldest.remove()
        counters.segmentCount = segments.count
    }

    // MARK: - Reading and acknowledging

    /// The position the next appended record will take (or a position equal to it).
    var endPosition: SpoolPosition {
        let last = segments[segments.count - 1]
        return SpoolPosition(segment: last.sequence, offset: last.end)
    }

    /// What a read from `requested` (clamped to the cursor) may copy: see ``SpoolReadPlan``.
    func readPlan(from requested: SpoolPosition) -> SpoolReadPlan {
        let position = max(requested, cursor)
        guard let index = segments.firstIndex(where: { $0.sequence >= position.segment }) else {
            return SpoolReadPlan(position: position, segments: [])
        }
        return SpoolReadPlan(position: position, segments: segments[index...].map { ($0, $0.end) })
    }

    /// See ``Spool/acknowledge(upTo:)``.
    ///
    /// Returns the segments wholly before the new cursor, taken out of the spool, and the cursor to persist: the
    /// caller writes it (``write(_:)``) and deletes the segments (or keeps one as the spare) after releasing the
    /// lock, so that appending goes on meanwhile.
    func acknowledge(upTo position: SpoolPosition) -> (retired: [SpoolSegment], cursor: PersistedCursor?) {
        guard position > cursor else { return ([], nil) }
        var current = cursor
        for segment in segments where segment.sequence >= current.segment && segment.sequence <= position.segment {
            let from = segment.sequence == current.segment ? current.offset : segment.firstFrameOffset
            let to = segment.sequence == position.segment ? position.offset : segment.end
            let done = segment.count(from: from, to: to)
            counters.queuedRecords -= done.records
            counters.queuedBytes -= done.bytes + done.records
            current = SpoolPosition(segment: segment.sequence, offset: to)
        }
        cursor = max(current, cursor)
        return retireBeforeCursor()
    }

    /// ``acknowledge(upTo:)`` for exactly the records of `extent` when they start at the cursor — as a reader that
    /// acknowledges what it read, in order, does: their count and size are the extent's, and no frame is walked to
    /// count them (the walk held appends up, a few thousand instructions a batch). Any other extent (the cursor
    /// moved meanwhile: the cap dropped records) is acknowledged up to its end, walking.
    func acknowledge(_ extent: SpoolExtent) -> (retired: [SpoolSegment], cursor: PersistedCursor?) {
        guard extent.records > 0, extent.start == cursor, extent.end > cursor else {
            return acknowledge(upTo: extent.end)
        }
        counters.queuedRecords -= extent.records
        // Each record counts its payload and its `\n`, as a read batch holds them.
        counters.queuedBytes -= extent.bytes
        cursor = extent.end
        return retireBeforeCursor()
    }

    /// Takes the segments wholly before the cursor out of ``segments`` (the caller retires them), with the cursor
    /// to persist.
    private func retireBeforeCursor() -> (retired: [SpoolSegment], cursor: PersistedCursor?) {
        var retired: [SpoolSegment] = []
        while segments.count > 1, segments[0].sequence < cursor.segment {
            retired.append(segments.removeFirst())
        }
        counters.segmentCount = segments.count
        return (retired, persistedCursor)
    }

    /// A cursor and the serial of the record it points at, and the newest segment, as the cursor file holds them.
    struct PersistedCursor: Equatable {
        var position: SpoolPosition
        var serial: UInt64
        var newest: SpoolCursorFile.Newest
    }

    /// The cursor as it is to be persisted now.
    private var persistedCursor: PersistedCursor {
        PersistedCursor(
            position: cursor,
            serial: SpoolRecovery.serial(atOrAfter: cursor, in: segments) ?? nextSerial,
            newest: newest
        )
    }

    /// Writes the cursor now (one `pwrite`).
    private func persistCursor() {
        write(persistedCursor)
    }

    /// Writes `cursor` to the cursor file (one `pwrite`) unless a newer one was written already: safe without the
    /// spool's lock, so that acknowledging does not hold appends up for a system call. Each part — the cursor, the
    /// newest segment — is the newer of `cursor`'s and of what was written before: an acknowledgement written after
    /// the spool's lock was released must not take back a segment started meanwhile, nor the reverse.
    /// Returns whether the cursor file now holds `cursor`'s position or a later one: if not, the segments it retires
    /// must stay on disk — the next open starts from the position saved last, and would count what they hold as
    /// lost.
    @discardableResult
    func write(_ cursor: PersistedCursor) -> Bool {
        cursorWriteLock.lock()
        defer { cursorWriteLock.unlock() }
        var cursor = cursor
        if let writtenCursor {
            if writtenCursor.position > cursor.position {
                cursor.position = writtenCursor.position
                cursor.serial = writtenCursor.serial
            }
            if writtenCursor.newest.segment > cursor.newest.segment { cursor.newest = writtenCursor.newest }
            if writtenCursor.position == cursor.position, writtenCursor.newest == cursor.newest { return true }
        }
        if cursorFile.write(cursor.position, serial: cursor.serial, newest: cursor.newest) {
            writtenCursor = cursor
            cursorSaveFailed = false
            return true
        }
        if !cursorSaveFailed {
            cursorSaveFailed = true
            diagnostics.report(
                "can't save the \(configuration.name) cursor \(cursorFile.path) (\(String(cString: strerror(errno)))); after a restart, events already sent may be sent again"
            )
        }
        return false
    }

    // MARK: - Reports

    func takeDropsToReport() -> UInt64 {
        defer { dropsToReport = 0 }
        return dropsToReport
    }

    func takeLossesToReport() -> UInt64 {
        defer { lossesToReport = 0 }
        return lossesToReport
    }

    func takeUncountedLossesToReport() -> [String] {
        defer { uncountedLossesToReport = [] }
        return uncountedLossesToReport
    }
}

/// The segments a read may take records from — from the one it starts in to the newest, each with its end when
/// the plan was made — taken under the spool's lock and used after it is released: the records before those ends
/// don't change until they are acknowledged (appends write after them), and the segments stay mapped while the
/// plan (or the ``SpoolRecords`` read from it) holds them. Their retirement waits for a copy (``Spool``'s reader
/// lock); records read in place are safe from it because their one reader acknowledges them only once it is done
/// with them. An append that meets the cap meanwhile may drop the oldest of them (counted as dropped): the read
/// still returns them, and acknowledging them does nothing.
struct SpoolReadPlan {
    /// Where the read starts (not before the cursor).
    var position: SpoolPosition
    var segments: [(segment: SpoolSegment, end: Int)]

    /// Where a read starts: ``position``, or the first segment's first frame if its segment is gone (dropped at the
    /// cap), at the frame after any damaged stretch. `segments` is not empty.
    private var firstFrame: SpoolPosition {
        let first = segments[0].segment
        let offset = first.sequence == position.segment ? position.offset : first.firstFrameOffset
        return SpoolPosition(segment: first.sequence, offset: first.frameStart(offset))
    }

    /// Copies records from ``position`` into one `\n`-framed batch: see ``Spool/read(from:maxBytes:maxRecords:)``.
    /// The batch's bytes are `storage`, emptied first: a reader that keeps `storage` between reads, and lets go
    /// of the batches it read, copies into the same memory every time (no allocation, no fresh pages).
    func read(
        before limit: SpoolPosition?,
        maxBytes: Int,
        maxRecords: Int,
        reusing storage: inout [UInt8]
    ) -> SpoolBatch {
        storage.removeAll(keepingCapacity: true)
        guard !segments.isEmpty else {
            return SpoolBatch(bytes: [], recordCount: 0, start: self.position, end: self.position)
        }
        var index = 0
        var position = firstFrame
        let start = position
        var bytes: [UInt8] = []
        swap(&bytes, &storage)
        defer { storage = bytes }
        var count = 0
        var unfilled = false
        // Taken once per segment, not once per record (a retain and a release each time).
        var (segment, end) = segments[index]
        while count < maxRecords {
            if position.offset >= end {
                guard index + 1 < segments.count else { break }
                index += 1
                (segment, end) = segments[index]
                let first = segment.frameStart(segment.firstFrameOffset)
                position = SpoolPosition(segment: segment.sequence, offset: first)
                continue
            }
            if let limit, position >= limit { break }
            guard segment.isCommitted(at: position.offset) else {
                unfilled = true
                break
            }
            let payload = segment.payload(at: position.offset)
            if count > 0, bytes.count + payload.count + 1 > maxBytes { break }
            // A bounded batch takes its whole size at once (its pages are touched only as they fill): reused
            // storage then never grows again.
            if count == 0 {
                bytes.reserveCapacity(maxBytes <= 4 << 20 ? maxBytes : min(maxBytes, end - position.offset))
            }
            bytes.append(contentsOf: payload)
            bytes.append(UInt8(ascii: "\n"))
            count += 1
            position.offset = segment.nextFrame(after: position.offset)
        }
        // Normalize a position at the end of a full segment to the start of the next one.
        if position.offset >= segments[index].end, index + 1 < segments.count {
            let next = segments[index + 1].segment
            position = SpoolPosition(segment: next.sequence, offset: next.firstFrameOffset)
        }
        var batch = SpoolBatch(bytes: bytes, recordCount: count, start: start, end: position)
        batch.endsAtUnfilledRecord = unfilled
        return batch
    }

    /// How far ahead of the frame it is at a read in place asks for the segment's cache lines, in bytes.
    static let prefetchDistance = 2048

    /// At most `maxRecords` records from ``position`` (none that starts at `limit` or later), where they lie: those
    /// of the first segment that has any from there — the next read takes the next segment's. Their extent is the
    /// one ``read(before:maxBytes:maxRecords:reusing:)`` gives the same records. See ``SpoolRecords``.
    func readInPlace(before limit: SpoolPosition?, maxRecords: Int) -> SpoolRecords {
        guard !segments.isEmpty else { return SpoolRecords(none: self.position) }
        var index = 0
        var position = firstFrame
        let start = position
        // Past the end of a segment that was the newest when it was last read: the records start in the next.
        while position.offset >= segments[index].end, index + 1 < segments.count {
            index += 1
            let segment = segments[index].segment
            position = SpoolPosition(segment: segment.sequence, offset: segment.frameStart(segment.firstFrameOffset))
        }
        let (segment, end) = segments[index]
        let first = position.offset
        var count = 0
        var bytes = 0
        var unfilled = false
        /// Where the last record's payload ends.
        var last = first
        // Each step waits for the length in the frame it is at, most often a line a log call just wrote on another
        // core: the lines up to `prefetchDistance` ahead are asked for meanwhile (the records lie one after another).
        // Only past a filled frame: the lines ahead of a place still being filled are the ones log calls are
        // writing, and asking for them while the read comes back for it would pull them from under the calls. Not
        // across a long jump (a large record, a damaged stretch): only the lines ahead of the frame.
        var prefetched = first
        while count < maxRecords, position.offset < end {
            if let limit, position >= limit { break }
            guard segment.isCommitted(at: position.offset) else {
                unfilled = true
                break
            }
            prefetched = max(prefetched, position.offset)
            let ahead = min(position.offset &+ Self.prefetchDistance, end)
            while prefetched < ahead {
                cjustlog_prefetch(segment.base + prefetched)
                prefetched &+= 64
            }
            let length = segment.recordLength(at: position.offset)
            bytes += length + 1
            count += 1
            last = position.offset + segment.format.frameHeaderSize + length
            position.offset = segment.frameStart(last)
        }
        // At the end of a full segment: the start of the next one (as a copying read ends).
        if position.offset >= end, index + 1 < segments.count {
            let next = segments[index + 1].segment
            position = SpoolPosition(segment: next.sequence, offset: next.firstFrameOffset)
        }
        return SpoolRecords(
            segment: segment,
            from: first,
            to: last,
            extent: SpoolExtent(start: start, end: position, records: count, bytes: bytes),
            endsAtUnfilledRecord: unfilled
        )
    }
}
