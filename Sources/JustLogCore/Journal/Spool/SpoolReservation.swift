/// The place of one record in a spool, taken under the spool's lock (``Spool/reserveRecord(_:whileQueuedBytesBelow:)``)
/// and filled after it is released (``fill(with:)``): the log call copies its record and computes its checksums
/// while other calls take their places, instead of holding their locks for it.
///
/// The record counts as appended from the reservation on — its serial, its place in the order, the counters — and
/// readers wait at it until it is filled (``SpoolBatch/endsAtUnfilledRecord``). Filling it is not optional: a
/// reservation never filled holds every reader up, and the spool's close. The segment stays mapped until then,
/// whatever happens to it meanwhile (dropped at the spool's cap, the spool closed: both wait for the fills in
/// flight): the copy never lands in memory that is gone.
package struct SpoolReservation: ~Copyable {
    /// What ``SpoolStorage/reserve(_:)`` took, under the spool's lock.
    struct Place {
        var start: SpoolPosition
        var end: SpoolPosition
        var frame: UnsafeMutableRawPointer
        var count: Int
        /// Whether the record is written already (a segment written through the file): the fill does nothing.
        var isWritten: Bool
    }

    private let place: Place

    init(_ place: Place) {
        self.place = place
    }

    /// Where the record starts.
    package var start: SpoolPosition { place.start }
    /// The position just after it: acknowledging up to here acknowledges it.
    package var end: SpoolPosition { place.end }

    /// Copies `record` (of the size reserved) in and publishes it (see ``SpoolSegment/fill(_:with:)``). Needs no
    /// lock.
    package consuming func fill(with record: UnsafeRawBufferPointer) {
        precondition(record.count == place.count, "a spool reservation is filled with a record of the size reserved")
        if !place.isWritten { SpoolSegment.fill(place.frame, with: record) }
    }
}
