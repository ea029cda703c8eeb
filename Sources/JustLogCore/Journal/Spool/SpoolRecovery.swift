/// What a spool found when it was opened: where sending resumes, which records could not be read, and the
/// lines that say so. Decided from the segments' scans, the cursor file and the loss ledger; does no I/O.
///
/// - **The cursor is checked, never trusted blindly.** A cursor whose checksum holds is resolved by its serial:
///   sending resumes at the first intact record at or after it. A cursor that is damaged (or, in the older
///   16-byte format, points at no record boundary) is replaced by the oldest record kept: records may be
///   sent twice (at-least-once), none is skipped.
/// - **Losses are counted by serial.** Every record from the cursor on has a serial one more than the record
///   before; the serials between the cursor and the highest serial known (records seen, damaged records whose
///   frame header survived, the last serial each segment header recorded) that belong to no intact record
///   are lost: a damaged record, a missing or emptied segment, a file cut short — but not a reserved frame never
///   filled (its call never returned; see ``SpoolSegment/reserve(_:serial:)``).
/// - **Missing newest segments are found by the cursor file.** It names the newest segment made (see
///   ``SpoolCursorFile/Newest``); if the folder has no segment that new, the newest ones were deleted: their records
///   before the serial it remembers are counted, and the newest one's are reported as of unknown number — as an
///   emptied newest segment's are. An earlier cursor file names only the segment it points into.
/// - **Reported once.** Serials already in the ``SpoolLossLedger`` were reported by an earlier open, or were found
///   to be calls that never returned.
struct SpoolRecovery {
    /// One lost stretch of serials and where it was.
    struct Loss: Equatable {
        var serials: Range<UInt64>
        var place: String
        var count: UInt64 { serials.upperBound - serials.lowerBound }

        /// This loss without the serials of `excluded` (sorted): the stretches left, in the same place.
        func excluding(_ excluded: [UInt64]) -> [Loss] {
            var stretches: [Loss] = []
            var from = serials.lowerBound
            for serial in excluded where serials.contains(serial) && serial >= from {
                if serial > from { stretches.append(Loss(serials: from..<serial, place: place)) }
                from = serial + 1
            }
            if from < serials.upperBound { stretches.append(Loss(serials: from..<serials.upperBound, place: place)) }
            return stretches
        }
    }

    /// Where sending resumes.
    var cursor: SpoolPosition
    /// The serial of the first record at or after ``cursor`` (or the next serial to be appended).
    var cursorSerial: UInt64
    /// The serial the next appended record gets.
    var nextSerial: UInt64
    /// Every stretch of serials lost from the cursor on (reported now or earlier).
    var losses: [Loss] = []
    /// The stretches with records not reported before.
    var newLosses: [Loss] = []
    /// How many records were not reported before.
    var newlyLost: UInt64 = 0
    /// Damage whose records can't be counted (older-format segments, a damaged header at the end).
    var uncounted: [String] = []
    /// Why the cursor was not used, if it wasn't.
    var cursorProblem: String?
    /// The newest segment the cursor file says was made (0: it does not say): a new segment gets a later number.
    var newestMadeSegment: UInt64 = 0
    /// The serials of reserved frames never filled (calls that never returned), kept in the ledger: the next record
    /// appended may be written over such a frame at the end of the records, and its serial then lies in a gap
    /// that would otherwise be taken for a loss. Not those an intact record has.
    var unfinishedSerials: [UInt64] = []

    /// - Parameters:
    ///   - segments: the segments opened and scanned, oldest first, with their scans.
    ///   - emptied: names of segment files too short to hold a header (removed by the caller).
    ///   - unopenable: names of segment files that could not be opened (moved aside by the caller).
    init(
        segments: [(segment: SpoolSegment, scan: SegmentScan)],
        emptied: [UInt64],
        unopenable: [UInt64],
        cursorFile: SpoolCursorFile.Content,
        ledger: SpoolLossLedger
    ) {
        let oldest =
            segments.first.map { SpoolPosition(segment: $0.segment.sequence, offset: $0.segment.firstFrameOffset) }
            ?? SpoolPosition(segment: 0, offset: 0)
        let highest = segments.compactMap { $0.scan.serials?.upperBound }.max() ?? 0

        // Where to resume, and from which serial on records count as not yet delivered.
        var fromSerial: UInt64?
        // The newest segment the cursor file says was made, and the one it points into.
        var newestMade: SpoolCursorFile.Newest?
        var pointedInto: UInt64?
        switch cursorFile {
        case .none:
            cursor = oldest
            if segments.contains(where: { $0.segment.recordCount > 0 }) {
                cursorProblem = "the cursor file is missing or empty"
            }
        case .current(let saved, let serial, let made):
            newestMade = made
            newestMadeSegment = made?.segment ?? 0
            pointedInto = saved.segment
            if let entry = segments.first(where: { $0.segment.sequence == saved.segment }),
                entry.segment.format == .legacy
            {
                cursor = entry.segment.isBoundary(saved.offset) ? saved : oldest
            } else {
                cursor = Self.position(ofFirstSerialAtLeast: serial, in: segments)
            }
            fromSerial = serial
        case .legacy(let saved):
            pointedInto = saved.segment
            if let entry = segments.first(where: { $0.segment.sequence == saved.segment }),
                entry.segment.isBoundary(saved.offset)
            {
                cursor = saved
            } else {
                cursor = oldest
                cursorProblem = "it points at no record (segment \(saved.segment), offset \(saved.offset))"
            }
        case .damaged:
            cursor = oldest
            cursorProblem = "its checksum does not match"
        }
        let firstSerial = Self.serial(atOrAfter: cursor, in: segments)
        cursorSerial = fromSerial ?? firstSerial ?? (highest + 1)
        // Not below the serial the newest segment made started at, if it is gone: a serial counted lost is not reused.
        let newestMadeSerial = newestMade?.nextSerial ?? 1
        nextSerial = max(highest + 1, cursorSerial, ledger.ranges.last?.upperBound ?? 1, newestMadeSerial, 1)

        // The serials lost from the cursor on.
        let from = fromSerial ?? firstSerial ?? (highest + 1)
        var runs: [(run: SegmentScan.Run, segment: UInt64)] = []
        var known = from > 0 ? from - 1 : 0
        for entry in segments where entry.segment.sequence >= cursor.segment || fromSerial != nil {
            runs += entry.scan.runs.map { ($0, entry.segment.sequence) }
            if let serials = entry.scan.serials { known = max(known, serials.upperBound) }
        }
        runs.sort { $0.run.firstSerial < $1.run.firstSerial }
        var expected = from
        var previous: (run: SegmentScan.Run, segment: UInt64)?
        for entry in runs where entry.run.lastSerial >= expected {
            if entry.run.firstSerial > expected {
                losses.append(
                    Loss(
                        serials: expected..<entry.run.firstSerial,
                        place: Self.place(after: previous, before: entry, segments: segments)
                    )
                )
            }
            expected = max(expected, entry.run.lastSerial + 1)
            previous = entry
        }
        if known >= expected {
            losses.append(
                Loss(
                    serials: expected..<(known + 1),
                    place: Self.place(after: previous, before: nil, segments: segments)
                )
            )
            expected = known + 1
        }
        // The newest segment made was not opened (missing, emptied or moved aside): the serials before the one it
        // started at that no intact record has were in segments after the newest opened, all gone (or in the newest
        // made itself, from before an open: see ``SpoolCursorFile/Newest``). Its own later records: `uncounted`.
        let newestOpened = segments.last?.segment.sequence ?? 0
        if let newestMade, newestMade.segment > newestOpened, newestMade.nextSerial > expected {
            let after = segments.last.map { " after \(SpoolSegment.fileName($0.segment.sequence))" } ?? ""
            losses.append(
                Loss(
                    serials: expected..<newestMade.nextSerial,
                    place: "in the segments\(after) that are missing, emptied or moved aside"
                )
            )
        }
        // Reserved frames never filled were calls that never returned: not lost.
        // But for a serial a record has, intact or damaged: a record refused partway through the file leaves its
        // serial to the next one, maybe in the next segment, whose loss must be reported.
        let recorded =
            segments.flatMap { $0.scan.runs.map { $0.firstSerial...$0.lastSerial } }
            + segments.flatMap { $0.scan.damagedSerials.map { $0...$0 } }
        let unfinished = Self.serials(segments.flatMap(\.scan.unfinishedSerials).sorted(), outside: recorded)
        if !unfinished.isEmpty { losses = losses.flatMap { $0.excluding(unfinished) } }
        unfinishedSerials = unfinished
        newlyLost = ledger.unreported(in: losses.map(\.serials))
        newLosses = losses.filter { ledger.unreported(in: [$0.serials]) > 0 }

        // Damage that can't be counted: older-format segments, and the newest segment's end when its header
        // (which records its last serial) is damaged too.
        let newest = segments.last { $0.segment.format.isFramed }?.segment.sequence
        for entry in segments where entry.segment.sequence >= cursor.segment {
            guard let tail = entry.scan.unreadableTail, let last = entry.segment.lastNonZero(from: tail) else {
                continue
            }
            let name = SpoolSegment.fileName(entry.segment.sequence)
            if entry.segment.format == .legacy {
                uncounted.append(
                    "\(last + 1 - tail) bytes after offset \(tail) of \(name) (an older-format segment) can't be read; how many records they held is unknown"
                )
            } else if entry.segment.sequence == newest, entry.scan.committedSerial == nil,
                // Not when a newer segment made is gone: it started at a serial after this tail's, counted above.
                newestMade.map({ $0.segment <= entry.segment.sequence }) ?? true
            {
                uncounted.append(
                    "\(last + 1 - tail) bytes at the end of \(name) can't be read and its header is damaged; how many records they held is unknown"
                )
            }
        }
        // The newest segment all zeros, its header too, though the cursor file says it was made — which it says only
        // after the header was written: a power loss that kept the file's size and none of its pages. (A kill keeps
        // the pages; a process killed before writing the header had not said the segment was made.)
        if let entry = segments.last, let newestMade, newestMade.segment == entry.segment.sequence,
            entry.scan.repairedHeader, entry.segment.recordCount == 0, entry.scan.unreadableTail == nil,
            entry.scan.damage.isEmpty
        {
            uncounted.append(
                "the newest segment \(SpoolSegment.fileName(entry.segment.sequence)) was found zeroed, its header too (a power loss?); if it held records, how many is unknown"
            )
        }
        // Not one the cursor file says was never made: a process killed while it created the file (empty until its
        // size and header are written), before any record could go there.
        if let newestEmptied = emptied.max(), newestEmptied > (segments.last?.segment.sequence ?? 0),
            newestMade.map({ $0.segment >= newestEmptied }) ?? true
        {
            uncounted.append(
                "the newest segment \(SpoolSegment.fileName(newestEmptied)) was empty and was removed; if it held records, how many is unknown"
            )
        }
        if let newestUnopenable = unopenable.max(), newestUnopenable > (segments.last?.segment.sequence ?? 0) {
            uncounted.append(
                "the newest segment \(SpoolSegment.fileName(newestUnopenable)) could not be opened; how many records it held is unknown"
            )
        }
        // Segments newer than every file found: deleted.
        let newestFound = max(newestOpened, emptied.max() ?? 0, unopenable.max() ?? 0)
        if let newestMade, newestMade.segment > newestFound {
            uncounted.append(
                "the newest segment \(SpoolSegment.fileName(newestMade.segment)) is missing; if it held records, how many is unknown"
            )
        } else if newestMade == nil, let pointedInto, pointedInto > newestFound {
            uncounted.append(
                "the segment \(SpoolSegment.fileName(pointedInto)) the cursor points into is missing, as is any newer one; if they held records, how many is unknown"
            )
        }
    }

    /// The ledger to keep after this recovery: every loss known from the cursor on, and every serial of a call that
    /// never returned (neither is to be reported again).
    var ledger: SpoolLossLedger {
        SpoolLossLedger(ranges: losses.map(\.serials) + unfinishedSerials.map { $0..<$0 + 1 })
    }

    // MARK: - Helpers

    /// `sorted` without the serials in `ranges`, each range found by binary search (a crash loop of many logging
    /// threads may leave thousands of stubs, each breaking a run in two).
    static func serials(_ sorted: [UInt64], outside ranges: [ClosedRange<UInt64>]) -> [UInt64] {
        guard !sorted.isEmpty, !ranges.isEmpty else { return sorted }
        var inside = [Bool](repeating: false, count: sorted.count)
        for range in ranges {
            var low = 0
            var high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                if sorted[middle] < range.lowerBound { low = middle + 1 } else { high = middle }
            }
            var index = low
            while index < sorted.count, sorted[index] <= range.upperBound {
                inside[index] = true
                index += 1
            }
        }
        return sorted.indices.filter { !inside[$0] }.map { sorted[$0] }
    }

    /// Where the first intact record with a serial of at least `serial` is, or the end of the newest segment.
    private static func position(
        ofFirstSerialAtLeast serial: UInt64,
        in segments: [(segment: SpoolSegment, scan: SegmentScan)]
    ) -> SpoolPosition {
        for entry in segments {
            for run in entry.scan.runs where run.lastSerial >= serial {
                var offset = run.offset
                if run.firstSerial < serial {
                    for _ in 0..<(serial - run.firstSerial) { offset = entry.segment.nextFrame(after: offset) }
                }
                return SpoolPosition(segment: entry.segment.sequence, offset: offset)
            }
        }
        guard let last = segments.last?.segment else { return SpoolPosition(segment: 0, offset: 0) }
        return SpoolPosition(segment: last.sequence, offset: last.end)
    }

    /// The serial of the first intact record at or after `position`, if any.
    static func serial(
        atOrAfter position: SpoolPosition,
        in segments: [(segment: SpoolSegment, scan: SegmentScan)]
    ) -> UInt64? {
        serial(atOrAfter: position, in: segments.map(\.segment))
    }

    /// The serial of the first intact record at or after `position`, if any.
    static func serial(atOrAfter position: SpoolPosition, in segments: [SpoolSegment]) -> UInt64? {
        for segment in segments where segment.sequence >= position.segment && segment.format.isFramed {
            let offset = segment.frameStart(
                segment.sequence == position.segment ? position.offset : segment.firstFrameOffset
            )
            if offset < segment.end, let serial = segment.serial(at: offset) { return serial }
        }
        return nil
    }

    /// Words for where the serials between `previous` and `next` were.
    private static func place(
        after previous: (run: SegmentScan.Run, segment: UInt64)?,
        before next: (run: SegmentScan.Run, segment: UInt64)?,
        segments: [(segment: SpoolSegment, scan: SegmentScan)]
    ) -> String {
        switch (previous, next) {
        case (let previous?, let next?) where previous.segment == next.segment:
            return "in damaged bytes before offset \(next.run.offset) of \(SpoolSegment.fileName(next.segment))"
        case (let previous?, let next?):
            return
                "between \(SpoolSegment.fileName(previous.segment)) and \(SpoolSegment.fileName(next.segment)) (a segment missing, emptied, cut short or damaged)"
        case (let previous?, nil):
            return "at the end of \(SpoolSegment.fileName(previous.segment)) (cut short or damaged)"
        case (nil, let next?):
            return "before \(SpoolSegment.fileName(next.segment)) (a segment missing, emptied or damaged)"
        case (nil, nil):
            return "in segments that are missing, emptied or damaged"
        }
    }
}
