import Foundation
import Testing

@testable import JustLogCore

/// The direct format writes a plain journal record's lines straight from its bytes: they must be, byte for byte,
/// the lines the general path (``RecordBuilder`` and the formats) writes for the same event — including where the
/// direct format declines a record and the general path's renaming takes over.
@Suite struct DirectFormatTests {
    static let prefix: UInt64 = 0x3f2a_9c1d_8e7b_4a60
    static let runtime = RuntimeInfo(appVersion: "1.2 \"beta\"", osVersion: "Linux 6.1", device: "x86_64\nbox")
    static let zone = TimeZone(identifier: "Europe/Paris")!

    /// Events that exercise the writer: escapes, keys before, between and after the presets, every scalar type,
    /// keys that collide with JustLog's own or with the flattened metadata, times across seconds and before 1970.
    static let site = CallSite(file: "/src/App/Checkout \"view\".swift", function: "pay(_:)", line: 1234)

    static func event(
        _ level: LogLevel,
        _ message: String,
        _ userInfo: [String: LogValue],
        at nanoseconds: Int64 = 1_482_582_698_475_000_000,
        site: CallSite = site
    ) -> LogEvent {
        LogEvent(
            level: level,
            message: message,
            userInfo: userInfo,
            callSite: site,
            timestamp: LogTimestamp(nanosecondsSinceEpoch: nanoseconds)
        )
    }

    static let events: [LogEvent] = {
        let bare = CallSite(file: "NoFolder.swift", function: "f", line: 0)
        return [
            event(.info, "user signed in", ["userID": .int(42), "plan": .string("gold"), "attempt": .int(1)]),
            event(.verbose, "", [:], site: bare),
            event(
                .debug,
                "quote \" backslash \\ newline \n tab \t nul \u{0} del \u{7F} ls \u{2028} ps \u{2029} é ☃ 🚀",
                [:]
            ),
            event(
                .warning,
                "every scalar",
                [
                    "string": .string("x\"y"), "negative": .int(-9_223_372_036_854_775_808), "big": .uint(.max),
                    "double": .double(1.5), "whole": .double(3), "huge": .double(1e20), "tiny": .double(-2.5e-8),
                    "yes": .bool(true), "no": .bool(false), "nothing": .null, "": .string("empty key"),
                    "é": .int(1), "Z": .int(2), "a.b": .int(3),
                    // Keys that share their first eight bytes, or are a prefix of another.
                    "attribute_b": .int(4), "attribute_a": .int(5), "attribut": .int(6), "attributes": .int(7),
                    "attribu": .int(8), "attribu\u{0}": .int(9),
                ]
            ),
            event(.error, "keys around the presets", ["aaa": .int(1), "env": .string("call wins"), "zzz": .int(2)]),
            event(.info, "a call's log_type is renamed", ["log_type": .string("mine")]),
            event(.info, "flattened: a metadata key in userInfo", ["file": .string("mine"), "line": .int(7)]),
            event(.info, "flattened: error_code is a string", ["error_code": .int(-3)]),
            event(.info, "next second", ["n": .int(1)], at: 1_482_582_699_000_000_000),
            event(.info, "same second", ["n": .int(2)], at: 1_482_582_699_999_999_999),
            event(.info, "before 1970", ["n": .int(3)], at: -1_500_000_000),
            // Every byte escaped as \u00XX: the most a record's text can grow, which the writer reserves.
            event(
                .warning,
                String(repeating: "\u{1}", count: 50),
                ["\u{2}\u{3}": .string(String(repeating: "\u{1F}", count: 10)), "\u{7F}": .bool(false)],
                site: CallSite(file: "/\u{1}/\u{2}\u{3}", function: "\u{4}\u{5}\u{6}", line: .max)
            ),
            event(.info, "a DST change in Paris", [:], at: 1_711_846_799_500_000_000),
            event(.info, "its last nanoseconds", [:], at: 1_711_846_799_999_999_900),
            event(.info, "after it", [:], at: 1_711_846_800_000_000_000),
            // Keys equal to a default's as Swift compares `String`s, with other bytes: the call's value replaces
            // the default's, under the default's spelling.
            event(.info, "decomposed", ["cafe\u{301}": .string("call"), "\u{212A}elvin": .int(1)]),
            event(.info, "twinned ASCII", ["Kelvin": .int(2), "a;b": .int(3)]),
        ]
    }()

    /// Records written through the templates of ``events``' layouts, or through templates in the same slot (which
    /// tells layouts apart by level, line and lengths alone): the same call with other values and types, and
    /// calls one key's byte, the level or the line apart.
    static let layoutEvents: [LogEvent] = [
        event(.info, "user signed out", ["userID": .int(7), "plan": .string("silver \"x\""), "attempt": .double(2.5)]),
        event(.info, "a key one byte apart", ["userId": .int(42), "plan": .string("gold"), "attempt": .int(1)]),
        event(.warning, "another level", ["userID": .int(42), "plan": .string("gold"), "attempt": .int(1)]),
        event(
            .info,
            "another line",
            ["userID": .int(42), "plan": .string("gold"), "attempt": .int(1)],
            site: CallSite(file: site.file, function: site.function, line: 1235)
        ),
        event(
            .info,
            "another function",
            ["userID": .int(42)],
            site: CallSite(file: site.file, function: "paz(_:)", line: 1234)
        ),
        event(.info, "flattened: a string error_code stays a string", ["error_code": .string("E1")]),
        event(.info, "flattened: an unsigned error_code stays a number", ["error_code": .uint(.max)]),
    ]

    /// ``events``, then ``layoutEvents``, then ``events`` again: the second time from the templates of the first.
    static let written = events + layoutEvents + events

    static let defaults: [[String: LogValue]] = [
        [:],
        ["env": .string("prod"), "build": .int(7), "tags": .array([.string("a"), .int(1)])],
        ["error_code": .int(5), "nested": .object(["x": .int(1)]), "empty": .object([:])],
        ["message": .string("default shadows the message")],
        ["caf\u{E9}": .string("default"), "Kelvin": .string("default"), "a\u{37E}b": .string("default")],
    ]

    private func builder(_ defaults: [String: LogValue]) -> RecordBuilder {
        RecordBuilder(defaultUserInfo: defaults, runtime: Self.runtime, eventIDs: EventIDGenerator(prefix: Self.prefix))
    }

    /// The events' journal records, back to back with their `\n`, as the journal hands them over.
    private func chunk(_ events: [LogEvent], firstSequence: UInt64 = 41) -> [UInt8] {
        var bytes: [UInt8] = []
        for (index, event) in events.enumerated() {
            var event = event
            var record = JournalCodec.record(of: &event, eventIDPrefix: Self.prefix, errorLimits: CaptureLimits())
            JournalCodec.setSequence(firstSequence + UInt64(index), in: &record)
            bytes += record + [UInt8(ascii: "\n")]
        }
        return bytes
    }

    /// Reads every record of `bytes` with ``JournalRecordView`` and hands the batch to `body`.
    private func withBatch<T>(
        _ bytes: [UInt8],
        count: Int,
        format: DirectFormat,
        builder: RecordBuilder,
        _ body: (PlainBatch) throws -> T
    ) throws -> T {
        try bytes.withUnsafeBytes { raw in
            var members: [JournalRecordView.Member] = []
            var records: [JournalRecordView] = []
            var offset = 0
            for _ in 0..<count {
                let view = try #require(
                    JournalRecordView.plain(in: raw, at: offset, maximumMessageBytes: 1 << 20, members: &members)
                )
                #expect(raw[view.bytes.upperBound] == UInt8(ascii: "\n"))
                records.append(view)
                offset = view.bytes.upperBound + 1
            }
            #expect(offset == raw.count)
            return try body(
                PlainBatch(bytes: raw, records: records, members: members, format: format, builder: builder)
            )
        }
    }

    @Test(arguments: 0..<5)
    func fileLinesAreTheGeneralPathsLines(defaultsIndex: Int) throws {
        let builder = builder(Self.defaults[defaultsIndex])
        let format = try #require(DirectFormat(builder: builder))
        let lineFormat = LineFormat(timeZone: Self.zone)
        let direct = try withBatch(chunk(Self.written), count: Self.written.count, format: format, builder: builder) {
            batch in
            var lineTimes = TimeTextCache(.line(Self.zone))
            var timestamps = TimeTextCache(.rfc3339)
            var templates = LineTemplates.aggregated()
            var out = OutputBuffer()
            for index in 0..<batch.count {
                batch.writeFileLine(
                    at: index,
                    lineFormat: lineFormat,
                    lineTimes: &lineTimes,
                    times: &timestamps,
                    templates: &templates,
                    into: &out
                )
            }
            return out.bytes
        }
        var general: [UInt8] = []
        for (index, event) in Self.written.enumerated() {
            lineFormat.writeFileLine(for: builder.record(for: event, sequence: 41 + UInt64(index)), into: &general)
        }
        // Bytes, not `String`s: `String` equality is canonical equivalence, blind to the spelling of a key.
        #expect(
            direct == general,
            "\(String(decoding: direct, as: UTF8.self))\n\(String(decoding: general, as: UTF8.self))"
        )
    }

    @Test(arguments: 0..<5)
    func flattenedLinesAreTheGeneralPathsLines(defaultsIndex: Int) throws {
        let builder = builder(Self.defaults[defaultsIndex])
        let format = try #require(DirectFormat(builder: builder))
        for token in [nil, "secret"] as [String?] {
            var presets = format.presets
            if let token { presets = try #require(format.presets(addingOwn: "token", .string(token))) }
            let written = try withBatch(
                chunk(Self.written),
                count: Self.written.count,
                format: format,
                builder: builder
            ) {
                batch in
                var times = TimeTextCache(.rfc3339)
                var templates = LineTemplates.flattened(presets: presets)
                return (0..<batch.count).map { index -> [UInt8]? in
                    var out = OutputBuffer()
                    out.append([1, 2, 3])
                    guard batch.writeFlattened(at: index, times: &times, templates: &templates, into: &out) else {
                        #expect(out.bytes == [1, 2, 3], "a declined record leaves the buffer as it was")
                        return nil
                    }
                    return Array(out.bytes.dropFirst(3))
                }
            }
            var declined = 0
            for (index, event) in Self.written.enumerated() {
                var record = builder.record(for: event, sequence: 41 + UInt64(index))
                if let token {
                    KeyCollision.insert("token", .string(token), into: &record.userInfo, displacedSuffix: "userInfo")
                }
                guard let direct = written[index] else {
                    declined += 1
                    continue
                }
                #expect(
                    String(decoding: direct, as: UTF8.self)
                        == String(decoding: FlattenedFormat.encode(record), as: UTF8.self),
                    "event \(index): \(event.message)"
                )
            }
            // What must be declined: a call's log_type; userInfo keys that are flattened metadata keys; a default
            // that is a non-empty object; a default `message`.
            // defaults with keys that other spellings equal decline the calls with such keys.
            // Each of ``events`` is written twice.
            switch defaultsIndex {
            case 2, 3: #expect(declined == Self.written.count)
            case 4: #expect(declined == 2 * 5)
            default: #expect(declined == 2 * 2)
            }
        }
    }

    /// A reconfigured logger hands over batches of a new format: the templates of the old one (other defaults) must
    /// not write its lines.
    @Test func templatesOfAnotherFormatAreNotUsed() throws {
        var templates = LineTemplates.aggregated()
        for defaults in [Self.defaults[0], Self.defaults[1], Self.defaults[0]] {
            let builder = builder(defaults)
            let format = try #require(DirectFormat(builder: builder))
            let lineFormat = LineFormat(timeZone: Self.zone)
            let line = try withBatch(chunk([Self.events[0]]), count: 1, format: format, builder: builder) { batch in
                var lineTimes = TimeTextCache(.line(Self.zone))
                var times = TimeTextCache(.rfc3339)
                var out = OutputBuffer()
                batch.writeFileLine(
                    at: 0,
                    lineFormat: lineFormat,
                    lineTimes: &lineTimes,
                    times: &times,
                    templates: &templates,
                    into: &out
                )
                return out.bytes
            }
            var expected: [UInt8] = []
            lineFormat.writeFileLine(for: builder.record(for: Self.events[0], sequence: 41), into: &expected)
            #expect(line == expected)
        }
    }

    /// The event id's prefix is part of a template's text, its sequence number a hole: records one prefix apart
    /// take other templates, and every digit of a sequence is written.
    @Test func eventIDsOfEveryPrefixAndSequenceAreTheGeneralPaths() throws {
        let builder = builder([:])
        let format = try #require(DirectFormat(builder: builder))
        let ids: [(prefix: UInt64, sequence: UInt64)] = [
            (Self.prefix, 0), (Self.prefix, 1), (0, 0x0123_4567_89AB_CDEF), (Self.prefix, 0xFFFF_FFFF),
            (.max, 1 << 32), (Self.prefix, .max), (0xFEDC_BA98_7654_3210, 0xA5A5_5A5A_0F0F_F0F0),
        ]
        var bytes: [UInt8] = []
        for id in ids {
            var event = Self.events[0]
            var record = JournalCodec.record(of: &event, eventIDPrefix: id.prefix, errorLimits: CaptureLimits())
            JournalCodec.setSequence(id.sequence, in: &record)
            bytes += record + [UInt8(ascii: "\n")]
        }
        try withBatch(bytes, count: ids.count, format: format, builder: builder) { batch in
            expectTheGeneralPathsLines(
                batch,
                ids.map { builder.record(for: Self.events[0], sequence: $0.sequence, eventIDPrefix: $0.prefix) }
            )
        }
    }

    /// A layout longer than the table keeps (kilobytes of keys) gets a number of its own for each record, and its
    /// lines are still the general path's; a short one keeps its number.
    @Test func aLayoutTooLongToKeepIsNumberedAnewAndWrittenAllTheSame() throws {
        let builder = builder([:])
        let format = try #require(DirectFormat(builder: builder))
        let key = String(repeating: "k", count: LayoutTable.maximumKeptBytes)
        let events = [
            Self.event(.info, "long key", [key: .int(1)]), Self.event(.info, "long key", [key: .int(2)]),
            Self.events[0], Self.events[0],
        ]
        try withBatch(chunk(events), count: events.count, format: format, builder: builder) { batch in
            #expect(batch.layouts[0] != batch.layouts[1], "not kept: a number of its own")
            #expect(batch.layouts[2] == batch.layouts[3], "kept")
            expectTheGeneralPathsLines(
                batch,
                events.enumerated().map { builder.record(for: $1, sequence: 41 + UInt64($0)) }
            )
        }
    }

    /// A layout is compared in parts — the call site as one run of bytes, keys of up to eight bytes as their length
    /// and first word, longer ones with their rest — : records that differ in any one part have layouts of their
    /// own (and are written with their own text), the same record's layout is found again.
    @Test func recordsThatDifferInAnyPartOfTheirLayoutAreNumberedApart() throws {
        let builder = builder([:])
        let format = try #require(DirectFormat(builder: builder))
        let site = CallSite(file: "/src/App/Pay.swift", function: "pay(_:)", line: 12)
        func event(
            _ userInfo: [String: LogValue] = ["userID": .int(1), "a_long_key_1": .int(2)],
            level: LogLevel = .info,
            site: CallSite = site
        ) -> LogEvent {
            Self.event(level, "m", userInfo, site: site)
        }
        let variants = [
            event(level: .warning),
            event(site: CallSite(file: "/src/App/Pay.swift", function: "pay(_:)", line: 13)),
            event(site: CallSite(file: "/src/Other/Pay.swift", function: "pay(_:)", line: 12)),
            event(site: CallSite(file: "/src/App/Pax.swift", function: "pay(_:)", line: 12)),
            event(site: CallSite(file: "/src/App/Pay.swift", function: "pay(_:_:)", line: 12)),
            event(["userID": .int(1)]),
            event(["userID": .int(1), "a_long_key_1": .int(2), "x": .null]),
            event(["userIE": .int(1), "a_long_key_1": .int(2)]),
            event(["userI": .int(1), "a_long_key_1": .int(2)]),
            event(["userID": .int(1), "a_long_key_2": .int(2)]),
            event(["userID": .int(1), "a_long_key_12": .int(2)]),
            event(["userID": .int(1), "a_long_key": .int(2)]),
            event(["userID0": .int(1), "a_long_key_1": .int(2)]),
        ]
        // Each variant right after the base: where it takes the base's slot, it is compared with the base's layout.
        let events =
            variants.flatMap { [event(), $0] } + [event(), event(["userID": .int(7), "a_long_key_1": .int(8)])]
        try withBatch(chunk(events), count: events.count, format: format, builder: builder) { batch in
            for index in variants.indices {
                #expect(batch.layouts[2 * index + 1] != batch.layouts[2 * index], "variant \(index)")
            }
            #expect(batch.layouts[events.count - 1] == batch.layouts[events.count - 2], "values are not in a layout")
            expectTheGeneralPathsLines(
                batch,
                events.enumerated().map { builder.record(for: $1, sequence: 41 + UInt64($0)) }
            )
        }
    }

    /// Writes every record of `batch` in both forms through one cache of templates each, expecting the lines of
    /// `records` (the general path's record of each).
    private func expectTheGeneralPathsLines(_ batch: PlainBatch, _ records: [LogRecord]) {
        let lineFormat = LineFormat(timeZone: Self.zone)
        var lineTimes = TimeTextCache(.line(Self.zone))
        var times = TimeTextCache(.rfc3339)
        var aggregated = LineTemplates.aggregated()
        var flattened = LineTemplates.flattened(presets: batch.format.presets)
        for (index, record) in records.enumerated() {
            var out = OutputBuffer()
            batch.writeFileLine(
                at: index,
                lineFormat: lineFormat,
                lineTimes: &lineTimes,
                times: &times,
                templates: &aggregated,
                into: &out
            )
            var line: [UInt8] = []
            lineFormat.writeFileLine(for: record, into: &line)
            #expect(out.bytes == line, "record \(index)")
            out.removeAll()
            #expect(batch.writeFlattened(at: index, times: &times, templates: &flattened, into: &out))
            #expect(out.bytes == FlattenedFormat.encode(record), "record \(index)")
        }
    }

    /// Flattened templates carry their format's presets (its defaults): with a batch of another format they
    /// decline every record, so the general path writes it with the right defaults.
    @Test func flattenedTemplatesOfAnotherFormatDeclineEveryRecord() throws {
        var templates: LineTemplates?
        for (round, defaults) in [Self.defaults[0], Self.defaults[1]].enumerated() {
            let builder = builder(defaults)
            let format = try #require(DirectFormat(builder: builder))
            if templates == nil { templates = LineTemplates.flattened(presets: format.presets) }
            try withBatch(chunk([Self.events[0]]), count: 1, format: format, builder: builder) { batch in
                var times = TimeTextCache(.rfc3339)
                var out = OutputBuffer()
                let written = batch.writeFlattened(at: 0, times: &times, templates: &templates!, into: &out)
                #expect(written == (round == 0))
                #expect(written || out.count == 0)
            }
        }
    }

    @Test func aDefaultLogTypeLeavesEveryRecordToTheGeneralPath() {
        #expect(DirectFormat(builder: builder(["log_type": .string("custom")])) == nil)
        let format = DirectFormat(builder: builder(["token": .string("default")]))
        #expect(format?.presets(addingOwn: "token", .string("own")) == nil)
    }

    @Test func recordsThatAreNotPlainAreNotReadInPlace() throws {
        let site = CallSite(file: "a.swift", function: "f", line: 1)
        let now = LogTimestamp(nanosecondsSinceEpoch: 0)
        let notPlain = [
            LogEvent(
                level: .info,
                message: "nested",
                userInfo: ["a": .object(["b": .int(1)])],
                callSite: site,
                timestamp: now
            ),
            LogEvent(level: .info, message: "array", userInfo: ["a": .array([])], callSite: site, timestamp: now),
            LogEvent(level: .info, message: "metadata", metadata: ["m": .int(1)], callSite: site, timestamp: now),
            LogEvent(level: .info, message: "cut", callSite: site, timestamp: now, truncations: ["userInfo: cut"]),
            LogEvent(
                level: .error,
                message: "error",
                error: NSError(domain: "d", code: 1),
                callSite: site,
                timestamp: now
            ),
            LogEvent(level: .info, message: String(repeating: "x", count: 101), callSite: site, timestamp: now),
            LogEvent(
                level: .info,
                message: "too many members",
                userInfo: Dictionary(
                    uniqueKeysWithValues: (0...JournalRecordView.maximumMembers).map { ("k\($0)", LogValue.int(1)) }
                ),
                callSite: site,
                timestamp: now
            ),
        ]
        for event in notPlain {
            let bytes = chunk([event])
            var members: [JournalRecordView.Member] = [.init(key: 0..<0, value: 0, head: 0)]
            let view = bytes.withUnsafeBytes {
                JournalRecordView.plain(in: $0, at: 0, maximumMessageBytes: 100, members: &members)
            }
            #expect(view == nil, "\(event.message)")
            #expect(members.count == 1, "a record not read leaves the member list as it was")
        }
    }

    /// The file name is found eight bytes at a time: the same start as a byte-by-byte search from the end, for
    /// every place of the last `/` (none, first, last, in each byte of a word, after a `.` that looks like a `/`
    /// to a looser zero-byte test), inside a larger buffer.
    @Test func theFileNameStartsAfterTheLastSlashWhereverItIs() {
        var paths: [[UInt8]] = [[], Array("/".utf8), Array("a".utf8), Array("//".utf8), Array("/./.x/..y".utf8)]
        for length in 1...40 {
            let base = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            paths.append(base)
            for slash in 0..<length {
                var path = base
                path[slash] = UInt8(ascii: "/")
                paths.append(path)
                if slash + 1 < length {
                    path[slash + 1] = UInt8(ascii: ".")
                    paths.append(path)
                }
                var twice = path
                twice[slash / 2] = UInt8(ascii: "/")
                paths.append(twice)
                var high = path
                high[(slash + 3) % length] = 0xAF  // '/' with the high bit set: not a slash
                paths.append(high)
            }
        }
        for path in paths {
            let padded = Array("xx/yy".utf8) + path + Array("/zz".utf8)
            padded.withUnsafeBytes { bytes in
                let range = 5..<5 + path.count
                var expected = range.upperBound
                while expected > range.lowerBound, bytes[expected - 1] != UInt8(ascii: "/") { expected -= 1 }
                #expect(
                    JournalRecordView.lastComponentStart(of: range, in: bytes) == expected,
                    "\(String(decoding: path, as: UTF8.self))"
                )
            }
        }
    }

    @Test func aTornRecordIsNotRead() throws {
        let bytes = chunk(Array(Self.events.prefix(1)))
        for length in 0..<bytes.count - 1 {
            var members: [JournalRecordView.Member] = []
            let view = Array(bytes.prefix(length)).withUnsafeBytes {
                JournalRecordView.plain(in: $0, at: 0, maximumMessageBytes: 1 << 20, members: &members)
            }
            #expect(view == nil && members.isEmpty, "\(length) bytes")
        }
    }
}

/// The buffer the direct format writes into.
@Suite struct OutputBufferTests {
    @Test func writesAppendAndADeclinedWriteLeavesNothing() {
        var buffer = OutputBuffer()
        buffer.append([])
        #expect(buffer.count == 0)
        buffer.append(Array("ab".utf8))
        let declined = buffer.write(atMost: 100) { writer in
            writer.bytes(Array("lost".utf8))
            return false
        }
        #expect(!declined)
        buffer.append(UInt8(ascii: "c"))
        // Past the first growth, what was written stays.
        buffer.append([UInt8](repeating: UInt8(ascii: "d"), count: 10_000))
        #expect(buffer.bytes == Array("abc".utf8) + [UInt8](repeating: UInt8(ascii: "d"), count: 10_000))
        buffer.removeAll()
        #expect(buffer.bytes.isEmpty)
        var array: [UInt8] = []
        #expect(array.write(atMost: 0) { _ in true })
        #expect(array.isEmpty)
    }
}

/// The writer's copies: loads and stores that overlap for short runs, `memcpy` past 32 bytes.
@Suite struct RawWriterTests {
    @Test func copiesEveryLengthExactlyAfterAnyOffset() {
        let source = (0..<80).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for offset in 0..<3 {
            for length in 0...source.count {
                var out: [UInt8] = Array(repeating: 0xEE, count: offset)
                let copied = source[..<length]
                _ = out.write(atMost: length + 8) { writer in
                    copied.withUnsafeBytes { writer.bytes($0) }
                    writer.byte(0x7F)
                    return true
                }
                #expect(
                    out == Array(repeating: 0xEE, count: offset) + copied + [0x7F],
                    "length \(length) after \(offset)"
                )
            }
        }
    }
}

/// Times written from the per-second cache match what `LogTimestamp` writes, for every millisecond digit.
@Suite struct TimeTextCacheTests {
    @Test(arguments: ["UTC", "Asia/Kolkata", "America/St_Johns"])
    func writesWhatTheTimestampWrites(zoneName: String) throws {
        let zone = try #require(TimeZone(identifier: zoneName))
        var line = TimeTextCache(.line(zone))
        var rfc3339 = TimeTextCache(.rfc3339)
        // Two seconds, each millisecond pattern, then back to the first second; one time far in the past.
        let base: Int64 = 1_700_000_000_000_000_000
        let nanoseconds =
            (0..<1000).map { base + Int64($0) * 1_000_000 + 123 }
            + (0..<1000).map { base + 1_000_000_000 + Int64($0) * 1_000_000 } + [
                base + 999_999_999, 86_400_000_000_000,
            ]
        for nanos in nanoseconds {
            let timestamp = LogTimestamp(nanosecondsSinceEpoch: nanos)
            var raw: [UInt8] = []
            _ = raw.write(atMost: TimeTextCache.maximumCount) { writer in
                line.write(timestamp, into: &writer)
                return true
            }
            var array: [UInt8] = []
            rfc3339.write(timestamp, into: &array)
            #expect(raw == Array(timestamp.localLineTime(in: zone).utf8), "\(nanos)")
            #expect(array == Array(timestamp.rfc3339.utf8), "\(nanos)")
        }
    }
}
