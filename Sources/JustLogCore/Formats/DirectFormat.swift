/// Writes the aggregated form (SPEC §2) and the flattened form (SPEC §3) of a plain journal record straight from
/// its bytes (see ``JournalRecordView``): byte for byte what ``RecordBuilder``, ``AggregatedFormat`` and
/// ``FlattenedFormat`` write for the same event, without building a ``LogRecord`` — no dictionary, no `String`, no
/// sort of `String`s, no allocation per event.
///
/// What does not change between events is rendered once, here: the `defaultUserInfo` members with `log_type` for
/// each level (in key order), and the program's `app_version`, `device` and `version`. A record whose keys would
/// collide with JustLog's own (a call's `log_type`, a flattened key that is also a metadata key) is not written:
/// the writer returns `false` and the destination writes the record built the general way, which applies the
/// renaming rules.
package final class DirectFormat: Sendable {
    /// A `userInfo` member every record of a level has: a `defaultUserInfo` member, or one of JustLog's own.
    package struct Preset: Sendable {
        let key: [UInt8]
        /// ``UTF8Order/head(of:)`` of the key.
        let head: UInt64
        /// `"key":value`, as the aggregated form writes it.
        let member: [UInt8]
        /// The same in the flattened form; `nil` if it is not one member there (a non-empty object).
        let flattenedMember: [UInt8]?
        /// JustLog's own key (`log_type`, a destination's `token`): a call's member with the same key is renamed,
        /// which is the general path's work.
        let isOwn: Bool
    }

    /// The presets of each level (by raw value), in key order.
    package let presets: [[Preset]]
    /// Whether a default key has a byte past ASCII, or one of the ASCII characters that another character is
    /// canonically equivalent to (`K`, `;`, `` ` ``): then a call's key may equal it as Swift compares `String`s
    /// (which is how the general path merges them) with other bytes, and such a call is the general path's.
    private let defaultKeysHaveNonASCII: Bool
    private let defaultKeysHaveTwinnedASCII: Bool
    let limits: CaptureLimits
    /// `,"metadata":{"app_version":…,"device":…,"event_id":"`
    private let metadataHead: [UInt8]
    /// `","version":…},"userInfo":{`
    private let metadataTail: [UInt8]
    /// JSON string literals of the runtime's fields, for the flattened form.
    private let appVersion: [UInt8]
    private let device: [UInt8]
    private let osVersion: [UInt8]
    /// The keys of ``FixedMember``, and `"key":` of each (held here: a static is checked for its initialization
    /// at every use).
    private let fixedKeys = FixedMember.keys
    private let fixedKeyHeads = FixedMember.keys.map(UTF8Order.head(of:))
    private let fixedHeads = FixedMember.keys.map { [UInt8(ascii: "\"")] + $0 + Array("\":".utf8) }
    /// The numbers of its records' layouts, by which destinations find their lines' templates.
    let layouts = LayoutTable()

    /// The direct format of what `builder` builds, or `nil` when its defaults take one of JustLog's own keys (the
    /// renaming is the general path's).
    package init?(builder: RecordBuilder) {
        guard builder.defaultUserInfo[UserInfoKey.logType] == nil else { return nil }
        limits = builder.limits
        defaultKeysHaveNonASCII = builder.defaultUserInfo.keys.contains { $0.utf8.contains { $0 >= 0x80 } }
        defaultKeysHaveTwinnedASCII = builder.defaultUserInfo.keys.contains { $0.utf8.contains(where: Self.isTwinned) }
        presets = LogLevel.allCases.map { level in
            var members = builder.defaultUserInfo.map { Self.preset($0.key, $0.value, isOwn: false) }
            members.append(Self.preset(UserInfoKey.logType, .string(level.logType), isOwn: true))
            return members.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        }
        func json(_ text: String) -> [UInt8] {
            var out: [UInt8] = []
            JSONWriter.writeString(text, into: &out)
            return out
        }
        appVersion = json(builder.runtime.appVersion)
        device = json(builder.runtime.device)
        osVersion = json(builder.runtime.osVersion)
        metadataHead =
            Array(#","metadata":{"app_version":"#.utf8) + appVersion + Array(#","device":"#.utf8) + device
            + Array(#","event_id":""#.utf8)
        metadataTail = Array(#"","version":"#.utf8) + osVersion + Array(#"},"userInfo":{"#.utf8)
    }

    static func preset(_ key: String, _ value: LogValue, isOwn: Bool) -> Preset {
        var member: [UInt8] = []
        JSONWriter.writeString(key, into: &member)
        member.append(UInt8(ascii: ":"))
        var flattened = member
        JSONWriter.write(value, into: &member)
        var flattenedValue = value
        if key == UserInfoKey.errorCode, case .int(let code) = value { flattenedValue = .string(String(code)) }
        let isNested: Bool
        if case .object(let object) = value, !object.isEmpty { isNested = true } else { isNested = false }
        JSONWriter.write(flattenedValue, into: &flattened)
        let keyBytes = Array(key.utf8)
        return Preset(
            key: keyBytes,
            head: UTF8Order.head(of: keyBytes),
            member: member,
            flattenedMember: isNested ? nil : flattened,
            isOwn: isOwn
        )
    }

    /// The presets of each level with one more of JustLog's own members (a Logstash destination's `token`);
    /// `nil` if a default member has its key (the renaming is the general path's).
    package func presets(addingOwn key: String, _ value: LogValue) -> [[Preset]]? {
        let bytes = Array(key.utf8)
        guard !presets.contains(where: { $0.contains { $0.key == bytes } }) else { return nil }
        return presets.map { members in
            (members + [Self.preset(key, value, isOwn: true)]).sorted { $0.key.lexicographicallyPrecedes($1.key) }
        }
    }

    // MARK: - Writing a line of either form

    /// Appends the line of `record` in the form of `templates` — the aggregated one
    /// (``LineTemplates/aggregated()``: `{"message":…,"metadata":{…},"userInfo":{…}}`, SPEC §2) or the flattened
    /// one with its presets (``LineTemplates/flattened(presets:)``, SPEC §3) — through the template of its layout
    /// (numbered `layout`, see ``PlainBatch/layouts``), built here the first time. Returns `false` (with `out` as it
    /// was) when the record needs the general path: a key to rename, or that two members would share.
    func write(
        _ record: JournalRecordView,
        layout: Int,
        in batch: PlainBatch,
        times: inout TimeTextCache,
        templates: inout LineTemplates,
        into out: inout OutputBuffer
    ) -> Bool {
        write(record, layout: layout, in: batch, times: &times, templates: &templates, ends: 0, into: &out) { _ in
        } after: { _ in
        }
    }

    /// ``write(_:layout:in:times:templates:into:)`` as a line of a file: `prefix` (at most `prefixBound` bytes)
    /// before the form, `\n` after it, all in the form's reservation (each reservation of an ``OutputBuffer``
    /// checks its array's uniqueness and room). Returns `false` with `out` as it was — the prefix not written
    /// either — when the record needs the general path.
    func writeLine(
        _ record: JournalRecordView,
        layout: Int,
        in batch: PlainBatch,
        times: inout TimeTextCache,
        templates: inout LineTemplates,
        prefixBound: Int,
        prefix: (inout RawWriter) -> Void,
        into out: inout OutputBuffer
    ) -> Bool {
        write(
            record,
            layout: layout,
            in: batch,
            times: &times,
            templates: &templates,
            ends: prefixBound + 1,
            into: &out,
            before: prefix
        ) { writer in
            writer.byte(UInt8(ascii: "\n"))
        }
    }

    /// The form of `record` between what `before` and `after` write, at most `ends` bytes in all.
    @inline(__always)
    private func write(
        _ record: JournalRecordView,
        layout: Int,
        in batch: PlainBatch,
        times: inout TimeTextCache,
        templates: inout LineTemplates,
        ends: Int,
        into out: inout OutputBuffer,
        before: (inout RawWriter) -> Void,
        after: (inout RawWriter) -> Void
    ) -> Bool {
        switch templates.lookUp(layout, in: batch) {
        case .template(let found):
            // `templates` holds it, and nothing changes them until the line is written.
            found._withUnsafeGuaranteedRef { template in
                write(
                    template,
                    of: record,
                    in: batch,
                    times: &times,
                    ends: ends,
                    into: &out,
                    before: before,
                    after: after
                )
            }
        case .declined: return false
        case .missing:
            let built =
                if let presets = templates.flattenedPresets {
                    flattenedTemplate(record, layout: layout, in: batch, presets: presets[record.level.rawValue])
                } else {
                    aggregatedTemplate(record, layout: layout, in: batch)
                }
            templates.store(built, for: layout)
            guard let built else { return false }
            write(built, of: record, in: batch, times: &times, ends: ends, into: &out, before: before, after: after)
        }
        return true
    }

    // MARK: - The aggregated form

    /// The aggregated form's template of `record`'s layout; `nil` when its records need the general path.
    private func aggregatedTemplate(_ record: JournalRecordView, layout: Int, in batch: PlainBatch) -> LineTemplate? {
        let presets = presets[record.level.rawValue]
        let bytes = batch.bytes
        var out = LineTemplateBuilder()
        out.bytes(#"{"message":"#)
        out.hole(.message)
        out.bytes(metadataHead)
        out.bytes(Self.eventIDPrefixText(record.eventIDPrefix))
        out.hole(.eventSequence)
        out.bytes(#"","file":"#)
        out.string(UnsafeRawBufferPointer(rebasing: bytes[record.fileName]))
        out.bytes(#","function":"#)
        out.string(UnsafeRawBufferPointer(rebasing: bytes[record.function]))
        out.bytes(#","line":""#)
        out.integer(record.line)
        out.bytes(#"","timestamp":""#)
        out.hole(.timestamp)
        out.bytes(metadataTail)
        var members = UserInfoMerge(of: record, in: batch, presets: presets, format: self)
        var first = true
        while let member = members.next() {
            if !first { out.byte(UInt8(ascii: ",")) }
            first = false
            switch member {
            case .call(let index): writeCallMember(index, of: record, in: batch, flattened: false, into: &out)
            case .preset(let index): out.bytes(presets[index].member)
            }
        }
        out.byte(UInt8(ascii: "}"))
        out.byte(UInt8(ascii: "}"))
        guard !members.declined else { return nil }
        return out.finish(layout: layout)
    }

    // MARK: - The flattened form

    /// The flattened form's members that do not come from `userInfo`, in key order.
    private enum FixedMember: Int, CaseIterable {
        case timestamp, appVersion, device, eventID, file, function, line, message, version

        static let keys: [[UInt8]] = [
            "@timestamp", "app_version", "device", "event_id", "file", "function", "line", "message", "version",
        ].map { Array($0.utf8) }
    }

    /// The flattened form's template of `record`'s layout; `nil` when its records need the general path.
    private func flattenedTemplate(
        _ record: JournalRecordView,
        layout: Int,
        in batch: PlainBatch,
        presets: [Preset]
    ) -> LineTemplate? {
        let bytes = batch.bytes
        var out = LineTemplateBuilder()
        var fixed = 0
        var first = true
        var members = UserInfoMerge(of: record, in: batch, presets: presets, format: self)
        while let member = members.next() {
            if case .preset(let index) = member, presets[index].flattenedMember == nil { return nil }
            let memberHead =
                switch member {
                case .call(let index): batch.members[index].head
                case .preset(let index): presets[index].head
                }
            // The fixed members that come before this one.
            while fixed < fixedKeys.count {
                let fixedHead = fixedKeyHeads[fixed]
                let order =
                    fixedHead != memberHead
                    ? (fixedHead < memberHead ? -1 : 1)
                    : fixedKeys[fixed].withUnsafeBytes { fixedKey in
                        switch member {
                        case .call(let index):
                            UTF8Order.compare(
                                fixedHead,
                                fixedKey,
                                memberHead,
                                UnsafeRawBufferPointer(rebasing: bytes[batch.members[index].key])
                            )
                        case .preset(let index):
                            presets[index].key.withUnsafeBytes {
                                UTF8Order.compare(fixedHead, fixedKey, memberHead, $0)
                            }
                        }
                    }
                if order == 0 { return nil }
                if order > 0 { break }
                writeFixed(fixed, of: record, in: bytes, first: &first, into: &out)
                fixed += 1
            }
            out.byte(UInt8(ascii: first ? "{" : ","))
            first = false
            switch member {
            case .call(let index): writeCallMember(index, of: record, in: batch, flattened: true, into: &out)
            case .preset(let index): out.bytes(presets[index].flattenedMember!)
            }
        }
        guard !members.declined else { return nil }
        while fixed < fixedKeys.count {
            writeFixed(fixed, of: record, in: bytes, first: &first, into: &out)
            fixed += 1
        }
        out.byte(UInt8(ascii: "}"))
        return out.finish(layout: layout)
    }

    /// `"key":value` of the fixed member `index`, after a separator.
    private func writeFixed(
        _ index: Int,
        of record: JournalRecordView,
        in bytes: UnsafeRawBufferPointer,
        first: inout Bool,
        into out: inout LineTemplateBuilder
    ) {
        out.byte(UInt8(ascii: first ? "{" : ","))
        first = false
        out.bytes(fixedHeads[index])
        switch FixedMember(rawValue: index) ?? .version {
        case .timestamp:
            out.byte(UInt8(ascii: "\""))
            out.hole(.timestamp)
            out.byte(UInt8(ascii: "\""))
        case .appVersion: out.bytes(appVersion)
        case .device: out.bytes(device)
        case .eventID:
            out.byte(UInt8(ascii: "\""))
            out.bytes(Self.eventIDPrefixText(record.eventIDPrefix))
            out.hole(.eventSequence)
            out.byte(UInt8(ascii: "\""))
        case .file: out.string(UnsafeRawBufferPointer(rebasing: bytes[record.fileName]))
        case .function: out.string(UnsafeRawBufferPointer(rebasing: bytes[record.function]))
        case .line:
            out.byte(UInt8(ascii: "\""))
            out.integer(record.line)
            out.byte(UInt8(ascii: "\""))
        case .message: out.hole(.message)
        case .version: out.bytes(osVersion)
        }
    }

    // MARK: - Writing a line

    /// Writes `record`'s line from the template of its layout: the template's text, and the record's values in its
    /// holes — between what `before` and `after` write (at most `ends` bytes in all).
    @inline(__always)
    private func write(
        _ template: LineTemplate,
        of record: JournalRecordView,
        in batch: PlainBatch,
        times: inout TimeTextCache,
        ends: Int,
        into out: inout OutputBuffer,
        before: (inout RawWriter) -> Void,
        after: (inout RawWriter) -> Void
    ) {
        // Every byte of the record takes at most 6 in JSON (an escaped control character; a number's 9 bytes at
        // most 21 and its quotes, a `false`'s 1 byte 5); a time and an event id take fewer than 64 each.
        let bound = template.text.count + 6 * record.bytes.count + 128 + ends
        _ = out.write(atMost: bound) { out in
            before(&out)
            defer { after(&out) }
            let bytes = batch.bytes
            let firstMember = record.members.lowerBound
            template.text.withUnsafeBytes { text in
                var start = 0
                // Through its buffer: iterating the array itself retains and releases it.
                template.pieces.withUnsafeBufferPointer { pieces in
                    for piece in pieces {
                        out.bytes(UnsafeRawBufferPointer(rebasing: text[start..<piece.end]))
                        start = piece.end
                        switch piece.hole {
                        case .message:
                            JSONWriter.writeString(
                                utf8: UnsafeRawBufferPointer(rebasing: bytes[record.message]),
                                into: &out
                            )
                        case .eventSequence:
                            Self.writeEventSequence(record.sequence, into: &out)
                        case .timestamp:
                            times.write(record.timestamp, into: &out)
                        case .value(let index, let quotesIntegers):
                            Self.writeValue(
                                at: batch.members[firstMember + index].value,
                                in: bytes,
                                quotingIntegers: quotesIntegers,
                                into: &out
                            )
                        case .end:
                            break
                        }
                    }
                }
            }
            return true
        }
    }

    // MARK: - Members

    enum UserInfoMember {
        /// The index of a call's member in the batch's member list.
        case call(Int)
        /// The index of a preset.
        case preset(Int)
    }

    /// The `userInfo` members of a record in key order: the call's members merged with the presets, a call's
    /// member replacing a default one with its key. It stops, with ``declined`` set, at a call's member whose key
    /// is one of JustLog's own, or may equal a default key spelled otherwise.
    struct UserInfoMerge {
        private let bytes: UnsafeRawBufferPointer
        private let members: [JournalRecordView.Member]
        private let presets: [Preset]
        private let format: DirectFormat
        private var member: Int
        private let end: Int
        private var preset = 0
        /// The member whose key was last checked against the defaults' other spellings.
        private var checked = -1
        private(set) var declined = false

        init(of record: JournalRecordView, in batch: PlainBatch, presets: [Preset], format: DirectFormat) {
            bytes = batch.bytes
            members = batch.members
            self.presets = presets
            self.format = format
            member = record.members.lowerBound
            end = record.members.upperBound
        }

        mutating func next() -> UserInfoMember? {
            guard !declined else { return nil }
            guard member < end else {
                guard preset < presets.count else { return nil }
                defer { preset += 1 }
                return .preset(preset)
            }
            let call = members[member]
            let key = UnsafeRawBufferPointer(rebasing: bytes[call.key])
            if checked != member {
                checked = member
                if format.checksEquivalence, format.mayEqualADefaultKey(key) {
                    declined = true
                    return nil
                }
            }
            while preset < presets.count {
                let presetHead = presets[preset].head
                let order =
                    presetHead != call.head
                    ? (presetHead < call.head ? -1 : 1)
                    : presets[preset].key.withUnsafeBytes { UTF8Order.compare(presetHead, $0, call.head, key) }
                if order > 0 { break }
                if order < 0 {
                    defer { preset += 1 }
                    return .preset(preset)
                }
                // The same key: the call's value replaces a default's, but JustLog's own keys are renamed.
                if presets[preset].isOwn {
                    declined = true
                    return nil
                }
                preset += 1
                break
            }
            defer { member += 1 }
            return .call(member)
        }
    }

    /// Whether `key` may be canonically equivalent to a default key with other bytes (see
    /// ``defaultKeysHaveNonASCII``). An ASCII key without `K`, `;`, `` ` `` is equivalent only to itself.
    fileprivate var checksEquivalence: Bool { defaultKeysHaveNonASCII || defaultKeysHaveTwinnedASCII }

    fileprivate func mayEqualADefaultKey(_ key: UnsafeRawBufferPointer) -> Bool {
        var nonASCII = false
        var twinned = false
        for byte in key {
            if byte >= 0x80 { nonASCII = true } else if Self.isTwinned(byte) { twinned = true }
        }
        return (nonASCII && (defaultKeysHaveNonASCII || defaultKeysHaveTwinnedASCII))
            || (twinned && defaultKeysHaveNonASCII)
    }

    /// `K`, `;` and `` ` ``: the ASCII characters that another character (U+212A, U+037E, U+1FEF) is canonically
    /// equivalent to.
    private static func isTwinned(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "K") || byte == UInt8(ascii: ";") || byte == UInt8(ascii: "`")
    }

    /// `"key":` of a call's member, then its value's hole. In the flattened form an integer `error_code` is a
    /// string (SPEC §3).
    private func writeCallMember(
        _ index: Int,
        of record: JournalRecordView,
        in batch: PlainBatch,
        flattened: Bool,
        into out: inout LineTemplateBuilder
    ) {
        let key = UnsafeRawBufferPointer(rebasing: batch.bytes[batch.members[index].key])
        out.string(key)
        out.byte(UInt8(ascii: ":"))
        let quotesIntegers = flattened && key.count == 10 && key.elementsEqual(UserInfoKey.errorCode.utf8)
        out.hole(.value(index: index - record.members.lowerBound, quotesIntegers: quotesIntegers))
    }

    /// The JSON of the value whose tag byte is at `offset`; a signed integer in quotes if `quotingIntegers`.
    private static func writeValue(
        at offset: Int,
        in bytes: UnsafeRawBufferPointer,
        quotingIntegers: Bool,
        into out: inout RawWriter
    ) {
        let content = offset + 1
        switch bytes[offset] {
        case 0:
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: content, as: UInt32.self)))
            JSONWriter.writeString(
                utf8: UnsafeRawBufferPointer(rebasing: bytes[content + 4..<content + 4 + length]),
                into: &out
            )
        case 1:
            let value = Int64(bitPattern: word(at: content, in: bytes))
            if quotingIntegers { out.byte(UInt8(ascii: "\"")) }
            JSONWriter.writeInteger(value, into: &out)
            if quotingIntegers { out.byte(UInt8(ascii: "\"")) }
        case 2: JSONWriter.writeInteger(word(at: content, in: bytes), into: &out)
        case 3: JSONWriter.writeDouble(Double(bitPattern: word(at: content, in: bytes)), into: &out)
        case 4: out.bytes("false")
        case 5: out.bytes("true")
        default: out.bytes("null")
        }
    }

    private static func word(at offset: Int, in bytes: UnsafeRawBufferPointer) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The first 19 characters of ``EventIDGenerator/id(for:)``, the prefix's: `3f2a9c1d-8e7b-4a60-`.
    static func eventIDPrefixText(_ prefix: UInt64) -> [UInt8] {
        var text: [UInt8] = []
        _ = text.write(atMost: 40) { out in
            writeEventID(prefix: prefix, sequence: 0, into: &out)
            return true
        }
        return Array(text.prefix(19))
    }

    /// The last 17 characters of ``EventIDGenerator/id(for:)``, the sequence number's: `0000-000000000001`.
    static func writeEventSequence(_ sequence: UInt64, into out: inout RawWriter) {
        let high = hexDigits(UInt32(truncatingIfNeeded: sequence >> 32))
        let low = hexDigits(UInt32(truncatingIfNeeded: sequence))
        // high's first four digits, a dash, its last four, then low's eight.
        out.word((high & 0xFFFF_FFFF) | UInt64(UInt8(ascii: "-")) << 32 | (high >> 32 & 0xFF_FFFF) << 40)
        out.byte(UInt8(truncatingIfNeeded: high >> 56))
        out.word(low)
    }

    /// The 36 characters of ``EventIDGenerator/id(for:)``: `3f2a9c1d-8e7b-4a60-0000-000000000001`.
    static func writeEventID(prefix: UInt64, sequence: UInt64, into out: inout RawWriter) {
        // Hex digits of each half, in text order; then the dashes go between.
        let prefixHigh = hexDigits(UInt32(truncatingIfNeeded: prefix >> 32))
        let prefixLow = hexDigits(UInt32(truncatingIfNeeded: prefix))
        let sequenceHigh = hexDigits(UInt32(truncatingIfNeeded: sequence >> 32))
        let sequenceLow = hexDigits(UInt32(truncatingIfNeeded: sequence))
        let dash = UInt64(UInt8(ascii: "-"))
        // 8-4-4-4-12: bytes 0…7 | - | 8…11 | - | 12…15 | - | 16…19 | - | 20…31, as five little-endian words.
        out.word(prefixHigh)
        out.word(dash | (prefixLow & 0xFFFF_FFFF) << 8 | dash << 40 | (prefixLow >> 32 & 0xFFFF) << 48)
        out.word((prefixLow >> 48) | dash << 16 | (sequenceHigh & 0xFFFF_FFFF) << 24 | dash << 56)
        out.word(sequenceHigh >> 32 | (sequenceLow & 0xFFFF_FFFF) << 32)
        out.word(UInt32(truncatingIfNeeded: sequenceLow >> 32))
    }

    /// The 8 lower-case hex digits of `value`, most significant first, as the bytes of a word from its least
    /// significant byte up.
    private static func hexDigits(_ value: UInt32) -> UInt64 {
        // One nibble per byte, the most significant in the lowest byte.
        var spread = UInt64(value.byteSwapped)
        spread = (spread | spread << 16) & 0x0000_FFFF_0000_FFFF
        spread = (spread | spread << 8) & 0x00FF_00FF_00FF_00FF
        // Each byte now holds two nibbles of `value` in swapped order: split them.
        let high = (spread >> 4) & 0x000F_000F_000F_000F
        let low = spread & 0x000F_000F_000F_000F
        let nibbles = high | low << 8
        // 0…9 → '0'…'9', 10…15 → 'a'…'f': add '0', and 39 more where the nibble is 10 or more.
        let letters = ((nibbles + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return nibbles + 0x3030_3030_3030_3030 + letters * 39
    }
}
