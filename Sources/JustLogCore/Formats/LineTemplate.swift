/// A plain record's line with the text that depends only on the record's *layout* — its level, call site (file,
/// function, line), event id prefix and `userInfo` keys — rendered once, and holes for what each record has of its
/// own: its message, event sequence number, timestamp and values. Records from one call site share a layout, so a destination writes
/// most of each line as one copy of the template's text (see ``LineTemplates``).
///
/// ``DirectFormat`` builds templates with ``LineTemplateBuilder`` and writes every line through one, so that a line
/// written from a cached template and one from a fresh template are the same bytes by construction.
final class LineTemplate: Sendable {
    /// What a record puts into a hole.
    enum Hole: Equatable, Sendable {
        case message
        /// The event id's last 17 characters, its sequence number's (the first 19, the prefix's, are text).
        case eventSequence
        case timestamp
        /// The value of the record's `index`-th member in key order; an integer in quotes if `quotesIntegers`
        /// (the flattened form's `error_code`).
        case value(index: Int, quotesIntegers: Bool)
        /// No hole: the text ends here.
        case end
    }

    /// The text before `hole`, from the previous piece's `end`.
    struct Piece: Sendable {
        var end: Int
        var hole: Hole
    }

    let text: [UInt8]
    let pieces: [Piece]
    /// The number of the layout the template is for (see ``LayoutTable``).
    let layout: Int

    init(text: [UInt8], pieces: [Piece], layout: Int) {
        self.text = text
        self.pieces = pieces
        self.layout = layout
    }
}

/// Builds a ``LineTemplate``: the text as the format writes it, with a ``hole(_:)`` where a record's own value
/// goes.
struct LineTemplateBuilder {
    private(set) var text: [UInt8] = []
    private(set) var pieces: [LineTemplate.Piece] = []

    init() {
        text.reserveCapacity(512)
    }

    mutating func bytes(_ source: StaticString) {
        text.append(contentsOf: UnsafeRawBufferPointer(start: source.utf8Start, count: source.utf8CodeUnitCount))
    }

    mutating func bytes(_ source: [UInt8]) { text.append(contentsOf: source) }

    mutating func byte(_ value: UInt8) { text.append(value) }

    /// A JSON string literal of the UTF-8 `bytes`.
    mutating func string(_ bytes: UnsafeRawBufferPointer) { JSONWriter.writeString(utf8: bytes, into: &text) }

    mutating func integer(_ value: UInt64) { JSONWriter.writeInteger(value, into: &text) }

    mutating func hole(_ hole: LineTemplate.Hole) { pieces.append(LineTemplate.Piece(end: text.count, hole: hole)) }

    /// The template for the layout numbered `layout`.
    consuming func finish(layout: Int) -> LineTemplate {
        hole(.end)
        return LineTemplate(text: text, pieces: pieces, layout: layout)
    }
}

/// A destination's templates of the layouts it met last (see ``LineTemplate``), for one form, by the layouts'
/// numbers (which the format's ``LayoutTable`` gives, see ``PlainBatch/layouts``): a layout's template takes its
/// table slot's place, so a new layout replaces only the template of the layout it replaced in the table.
package struct LineTemplates: Sendable {
    /// The flattened form's presets (a destination's own members among them), by level; `nil`: the aggregated
    /// form, with the format's presets.
    let flattenedPresets: [[DirectFormat.Preset]]?
    /// The format the templates were built by, whose table numbers the layouts: a batch of another (the logger was
    /// reconfigured) empties the slots. Held, not identified: a format freed and another made at its address
    /// would pass for it.
    private var format: DirectFormat?
    /// The flattened presets came from another format than the batch's (a destination keeps one `LineTemplates`
    /// per format, and makes a new one when it changes): every record is declined, so the general path writes
    /// it, never a line with another format's defaults.
    private var presetsOfAnotherFormat = false
    /// The templates, which these hold; a lookup hands out an unowned reference (below), so that writing a line
    /// does not retain and release its template (BENCHMARKS.md part 29: the owned reference cost five atomic
    /// operations a line).
    private var slots: [LineTemplate?]
    /// Each slot's template, unowned: what a lookup reads.
    private var unownedSlots: [Unmanaged<LineTemplate>?]
    /// The layout each slot's format declines, if any: its records take the general path without a new attempt.
    private var declined: [Int]

    /// One per slot of the ``LayoutTable``, and one for the layouts it does not keep.
    static let slotCount = LayoutTable.slotCount + 1

    private init(flattenedPresets: [[DirectFormat.Preset]]?) {
        self.flattenedPresets = flattenedPresets
        slots = Array(repeating: nil, count: Self.slotCount)
        unownedSlots = Array(repeating: nil, count: Self.slotCount)
        declined = Array(repeating: 0, count: Self.slotCount)
    }

    /// Templates of the aggregated form (SPEC §2).
    package static func aggregated() -> LineTemplates { LineTemplates(flattenedPresets: nil) }

    /// Templates of the flattened form (SPEC §3) with `presets` (``DirectFormat/presets`` or what
    /// ``DirectFormat/presets(addingOwn:_:)`` made).
    package static func flattened(presets: [[DirectFormat.Preset]]) -> LineTemplates {
        LineTemplates(flattenedPresets: presets)
    }

    /// What the slots hold for a record's layout.
    enum Lookup {
        /// The template, unowned: valid while these templates are neither changed nor freed — use it (with
        /// `_withUnsafeGuaranteedRef`) within the access to them that looked it up, before any ``store(_:for:)``,
        /// and never keep it.
        case template(Unmanaged<LineTemplate>)
        /// The format declines the layout.
        case declined
        /// Not there: build it, then ``store(_:for:)`` it.
        case missing
    }

    /// Looks the template of the layout numbered `layout` up.
    mutating func lookUp(_ layout: Int, in batch: PlainBatch) -> Lookup {
        if format !== batch.format {
            if format != nil, flattenedPresets != nil { presetsOfAnotherFormat = true }
            format = batch.format
            for index in slots.indices {
                slots[index] = nil
                unownedSlots[index] = nil
                declined[index] = 0
            }
        }
        if presetsOfAnotherFormat { return .declined }
        let slot = LayoutTable.slot(ofNumber: layout)
        if let template = unownedSlots[slot], template._withUnsafeGuaranteedRef({ $0.layout }) == layout {
            return .template(template)
        }
        return declined[slot] == layout ? .declined : .missing
    }

    /// Keeps the template of the layout numbered `layout` (`nil`: the format declines it), in place of the one its
    /// slot held.
    mutating func store(_ template: LineTemplate?, for layout: Int) {
        let slot = LayoutTable.slot(ofNumber: layout)
        // A layout the table does not keep (kilobytes of keys) is another one each time: its template is not kept.
        guard slot < LayoutTable.slotCount else { return }
        slots[slot] = template
        unownedSlots[slot] = template.map(Unmanaged.passUnretained)
        declined[slot] = template == nil ? layout : 0
    }
}

/// Numbers the layouts of a format's records — a record's level, event id prefix, call site (line, file path and
/// function) and keys — so that destinations find their templates by a number, and a record's bytes are compared with its
/// layout's once per batch, not once per destination. Each layout keeps a slot, picked from the parts of it that
/// take no reading of bytes; a layout that takes a slot another one holds replaces it, with a new number (numbers
/// are never reused; a number's low bits are its slot, see ``slot(ofNumber:)``). A layout longer than
/// ``maximumKeptBytes`` is not kept: each of its records gets a number of its own.
///
/// The pipeline's thread numbers a batch at a time, under a lock of the table's own (tests make batches on
/// other threads).
final class LayoutTable: @unchecked Sendable {
    private let lock = ConditionLock()
    /// Each slot's layout (see ``layout(of:in:members:)``) and its number; 0: none.
    @exclusivity(unchecked) private var layouts: [[UInt8]]  // under `lock`, as the two below
    @exclusivity(unchecked) private var numbers: [Int]
    @exclusivity(unchecked) private var generation = 0

    static let slotCount = 256
    static let maximumKeptBytes = 4096
    /// The bits of a number that say its slot: 0 ..< ``slotCount``, or ``slotCount`` for a layout not kept.
    private static let slotBits = 9

    /// The slot a layout's number says: where destinations keep its template.
    static func slot(ofNumber number: Int) -> Int { number & ((1 << slotBits) - 1) }

    init() {
        layouts = Array(repeating: [], count: Self.slotCount)
        numbers = Array(repeating: 0, count: Self.slotCount)
    }

    /// The number of each of `records`' layouts (never 0).
    func number(
        _ records: [JournalRecordView],
        in bytes: UnsafeRawBufferPointer,
        members: [JournalRecordView.Member]
    ) -> [Int] {
        lock.withLock {
            records.map { record in
                let slot = Self.slot(of: record)
                if numbers[slot] != 0, Self.layout(of: record, in: bytes, members: members, equals: layouts[slot]) {
                    return numbers[slot]
                }
                generation += 1
                let layout = Self.layout(of: record, in: bytes, members: members)
                guard layout.count <= Self.maximumKeptBytes else { return generation << Self.slotBits | Self.slotCount }
                layouts[slot] = layout
                numbers[slot] = generation << Self.slotBits | slot
                return numbers[slot]
            }
        }
    }

    /// A slot for the record's layout, from the parts of it that take no reading of bytes.
    private static func slot(of record: JournalRecordView) -> Int {
        let mixed =
            record.line ^ UInt64(record.fileName.count) << 20 ^ UInt64(record.function.count) << 32
            ^ UInt64(record.members.count) << 44 ^ UInt64(record.level.rawValue) << 52 ^ record.eventIDPrefix
        return Int(truncatingIfNeeded: (mixed &* 0x9E37_79B9_7F4A_7C15) >> 56)
    }

    /// The record's layout: its level, event id prefix, call site (line, file path and function, as the record
    /// holds them, after their length) and keys in key order, each as its length, its head (see
    /// ``UTF8Order/head(of:in:)``, its first eight bytes) and its bytes after those eight. Keys of up to eight
    /// bytes, most of them, are compared as two integers, and the call site with one `memcmp`.
    static func layout(
        of record: JournalRecordView,
        in bytes: UnsafeRawBufferPointer,
        members: [JournalRecordView.Member]
    ) -> [UInt8] {
        var layout: [UInt8] = []
        func word(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { layout.append(contentsOf: $0) } }
        word(UInt64(record.level.rawValue))
        word(record.eventIDPrefix)
        word(UInt64(record.callSite.count))
        layout.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[record.callSite]))
        word(UInt64(record.members.count))
        for index in record.members {
            let member = members[index]
            word(UInt64(member.key.count))
            word(member.head)
            if member.key.count > 8 {
                let rest = member.key.lowerBound + 8..<member.key.upperBound
                layout.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[rest]))
            }
        }
        return layout
    }

    /// Whether ``layout(of:in:members:)`` of the record is `layout`, without building it.
    static func layout(
        of record: JournalRecordView,
        in bytes: UnsafeRawBufferPointer,
        members: [JournalRecordView.Member],
        equals layout: [UInt8]
    ) -> Bool {
        layout.withUnsafeBytes { expected in
            var matcher = LayoutMatcher(expected: expected, bytes: bytes)
            guard matcher.word(UInt64(record.level.rawValue)), matcher.word(record.eventIDPrefix),
                matcher.word(UInt64(record.callSite.count)), matcher.matches(record.callSite),
                matcher.word(UInt64(record.members.count))
            else { return false }
            for index in record.members {
                let member = members[index]
                guard matcher.word(UInt64(member.key.count)), matcher.word(member.head) else { return false }
                if member.key.count > 8, !matcher.matches(member.key.lowerBound + 8..<member.key.upperBound) {
                    return false
                }
            }
            return matcher.isAtEnd
        }
    }
}

/// Reads a layout (see ``LayoutTable/layout(of:in:members:)``) along a record's parts, comparing.
private struct LayoutMatcher {
    let expected: UnsafeRawBufferPointer
    let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(expected: UnsafeRawBufferPointer, bytes: UnsafeRawBufferPointer) {
        self.expected = expected
        self.bytes = bytes
    }

    var isAtEnd: Bool { offset == expected.count }

    /// Whether the layout has `value` next; moves past it if so.
    mutating func word(_ value: UInt64) -> Bool {
        guard offset + 8 <= expected.count,
            UInt64(littleEndian: expected.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) == value
        else { return false }
        offset += 8
        return true
    }

    /// Whether the layout has the bytes of `range` (of the record's bytes) next; moves past them if so.
    mutating func matches(_ range: Range<Int>) -> Bool {
        let count = range.count
        guard offset + count <= expected.count else { return false }
        let equal =
            count == 0
            || memcmp(expected.baseAddress! + offset, bytes.baseAddress! + range.lowerBound, count) == 0
        offset += count
        return equal
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
