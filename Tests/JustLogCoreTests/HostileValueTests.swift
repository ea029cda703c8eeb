import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

// Hostile values at capture: nesting a thousand deep, 100,000 keys, 10 MB strings and messages, NaN and
// characters that could break a line or a JSON reader. Each record keeps what fits and says what it cut in
// `truncated`. Self-containing Foundation containers crash a program that has no cycle check, so those run in
// a child process: see `HostileValueChildTests` in JustLogTests.

/// The documented defaults of `CaptureLimits` and the key that reports a cut, spelled out: changing one must fail here.
private enum Limit {
    static let depth = 32
    static let bytes = 1 << 20
    static let messageBytes = 1 << 20
    static let truncatedKey = "truncated"
}

@Suite struct HostileValueTests {
    /// Logs one event through a real pipeline and returns the record its destination received.
    func record(
        _ message: String = "hostile",
        error: (any Error)? = nil,
        userInfo: [String: Any]
    ) async throws -> LogRecord {
        let capture = CapturingDestination()
        let logger = StructuredLogger(configuration: .init(destinations: [.init(capture)], runtime: Fixtures.runtime))
        logger.info(message, error: error, userInfo: userInfo)
        try await logger.flush()
        _ = await logger.pipeline.shutdown(timeout: 5)
        let records = capture.records
        try #require(records.count == 1, "expected one record, got \(records.count)")
        return records[0]
    }

    /// Logs the events through a real file destination and returns every line of the file, parsed.
    func fileLines(_ log: (StructuredLogger) -> Void) async throws -> [FileLine] {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("hostile.log")
        let file = try FileDestination(configuration: .init(url: url, maximumFileSize: 1 << 30))
        let logger = StructuredLogger(configuration: .init(destinations: [.init(file)], runtime: Fixtures.runtime))
        log(logger)
        try await logger.flush()
        _ = await logger.pipeline.shutdown(timeout: 5)
        let text = try String(contentsOf: url, encoding: .utf8)
        return try text.split(separator: "\n").map { try FileLine(parsing: $0) }
    }

    func truncated(_ record: LogRecord) -> String {
        if case .string(let text)? = record.userInfo[Limit.truncatedKey] { return text }
        return "<no \(Limit.truncatedKey) field>"
    }

    /// Follows `[0]` down a value for as long as it is an array: how many arrays deep it is, and what is at the bottom.
    func descend(_ value: LogValue?) -> (depth: Int, bottom: LogValue?) {
        var depth = 0
        var current = value
        while case .array(let elements)? = current {
            depth += 1
            current = elements.first
        }
        return (depth, current)
    }

    // MARK: - Depth

    @Test func swiftArraysNestedAThousandDeepStopAtTheDepthCapWithAMarker() async throws {
        var nested: Any = "bottom"
        for _ in 0..<1000 { nested = [nested] }
        let record = try await record(userInfo: ["deep": nested])
        let (depth, bottom) = descend(record.userInfo["deep"])
        #expect(depth == Limit.depth)
        guard case .string(let marker)? = bottom else {
            Issue.record("bottom is \(String(describing: bottom))")
            return
        }
        #expect(marker == "<nested deeper than 32: Array<Any>>", "bottom is \(marker.prefix(80))")
        #expect(truncated(record).contains("userInfo.deep[0]"), "\(truncated(record))")
        #expect(truncated(record).contains("nested deeper than 32"), "\(truncated(record))")
    }

    @Test func foundationArraysNestedAThousandDeepStopAtTheDepthCapWithAMarker() async throws {
        var nested: AnyObject = "bottom" as NSString
        for _ in 0..<1000 { nested = NSMutableArray(object: nested) }
        let lines = try await fileLines { $0.info("deep", userInfo: ["deep": nested]) }
        try #require(lines.count == 1)
        let record = lines[0].record
        let (depth, bottom) = descend(record.userInfo["deep"])
        #expect(depth == Limit.depth)
        guard case .string(let marker)? = bottom else {
            Issue.record("bottom is \(String(describing: bottom))")
            return
        }
        #expect(marker == "<nested deeper than 32: NSMutableArray>", "bottom is \(marker.prefix(80))")
        #expect(truncated(record).contains("nested deeper than 32"), "\(truncated(record))")
    }

    @Test func aLogValueNestedAThousandDeepIsCappedSoItsLineCanBeReadBack() async throws {
        var nested: LogValue = "bottom"
        for _ in 0..<1000 { nested = .array([nested]) }
        // Without the cap the line is valid JSON but deeper than any reader accepts (ours stops at 512).
        let lines = try await fileLines { $0.info("deep", userInfo: ["deep": nested]) }
        try #require(lines.count == 1)
        #expect(descend(lines[0].record.userInfo["deep"]).depth == Limit.depth)
        #expect(truncated(lines[0].record).contains("nested deeper than 32"))
    }

    // MARK: - Size

    @Test func hundredThousandKeysKeepTheFirstThousandInByteOrderAndSaySo() async throws {
        var userInfo: [String: Any] = [:]
        for index in 0..<100_000 { userInfo[String(format: "key-%06d", index)] = index }
        let capture = CapturingDestination()
        let logger = StructuredLogger(configuration: .init(destinations: [.init(capture)], runtime: Fixtures.runtime))
        let start = ContinuousClock.now
        logger.info("many keys", userInfo: userInfo)
        let callerTime = ContinuousClock.now - start
        print("caller time of one event with 100,000 keys (debug build, no assertion): \(callerTime)")
        try await logger.flush()
        _ = await logger.pipeline.shutdown(timeout: 5)
        let record = try #require(capture.records.first)
        let kept = record.userInfo.keys.filter { $0.hasPrefix("key-") }.sorted()
        #expect(kept.count == 1000)
        #expect(
            kept == (0..<1000).map { String(format: "key-%06d", $0) },
            "the first 1,000 keys in byte order, in every run"
        )
        #expect(record.userInfo["key-000999"] == .int(999))
        #expect(truncated(record) == "userInfo: kept 1000 of 100000 keys (limit 1000)")
    }

    @Test func valuesPastTheSizeLimitAreCutInKeyOrderAndSaySo() async throws {
        // 200 values of 10 KB: about 2 MB, twice the 1 MiB a userInfo may carry.
        var userInfo: [String: Any] = [:]
        for index in 0..<200 { userInfo[String(format: "value-%03d", index)] = String(repeating: "v", count: 10_000) }
        let record = try await record(userInfo: userInfo)
        let kept = record.userInfo.keys.filter { $0.hasPrefix("value-") }.sorted()
        #expect(kept.count > 50 && kept.count < 200, "kept \(kept.count)")
        #expect(
            kept == (0..<kept.count).map { String(format: "value-%03d", $0) },
            "the first keys in byte order are kept"
        )
        #expect(
            truncated(record).contains("userInfo: kept \(kept.count) of 200 keys (size limit"),
            "\(truncated(record))"
        )
        let bytes = kept.reduce(0) { total, key in
            guard case .string(let text)? = record.userInfo[key] else { return total }
            return total + text.utf8.count
        }
        #expect(bytes <= Limit.bytes)
    }

    @Test func aTenMegabyteStringValueIsCutToTheSizeLimitAndSaysSo() async throws {
        let big = String(repeating: "0123456789", count: 1_048_576)
        let record = try await record(userInfo: ["before": 1, "big": big, "zzz": 2])
        guard case .string(let kept)? = record.userInfo["big"] else {
            Issue.record("big is \(String(describing: record.userInfo["big"]))")
            return
        }
        #expect(kept.hasSuffix("…[truncated]"))
        #expect(kept.utf8.count < Limit.bytes + 32)
        #expect(big.hasPrefix(kept.dropLast("…[truncated]".count)))
        #expect(record.userInfo["before"] == .int(1), "a key before the cut (in byte order) keeps its value")
        #expect(record.userInfo["zzz"] == nil, "a key after the cut has no room left")
        #expect(truncated(record).contains("userInfo.big: kept"), "\(truncated(record))")
        #expect(truncated(record).contains("of 10485760 bytes"), "\(truncated(record))")
        #expect(truncated(record).contains("userInfo: kept 2 of 3 keys (size limit"), "\(truncated(record))")
    }

    @Test func aKeyTooLongForTheSizeLimitIsLeftOutAndSaysSo() async throws {
        let longKey = String(repeating: "k", count: 2 << 20)
        let record = try await record(userInfo: ["a": 1, longKey: 2])
        #expect(record.userInfo["a"] == .int(1))
        #expect(record.userInfo[longKey] == nil)
        #expect(truncated(record) == "userInfo: kept 1 of 2 keys (size limit 1048576 bytes)")
    }

    @Test func longArraysKeepTheirFirstThousandElementsAndSaySo() async throws {
        let record = try await record(userInfo: ["numbers": Array(0..<5000), "names": ["a", "b"]])
        guard case .array(let numbers)? = record.userInfo["numbers"] else {
            Issue.record("no numbers")
            return
        }
        #expect(numbers == (0..<1000).map { .int(Int64($0)) })
        #expect(record.userInfo["names"] == ["a", "b"])
        #expect(truncated(record) == "userInfo.numbers: kept 1000 of 5000 elements (limit 1000)")
    }

    @Test func tenMegabytesOfDataAreEncodedOnlyAsFarAsTheSizeLimit() async throws {
        let record = try await record(userInfo: ["blob": Data(count: 10 << 20)])
        guard case .string(let text)? = record.userInfo["blob"] else {
            Issue.record("no blob")
            return
        }
        #expect(text.hasPrefix("<10485760 bytes: AAAA"))
        #expect(text.hasSuffix("…[truncated]>"))
        #expect(text.utf8.count <= Limit.bytes)
        #expect(truncated(record).hasPrefix("userInfo.blob: kept "), "\(truncated(record))")
        #expect(
            truncated(record).hasSuffix(" of 10485760 bytes of data (size limit 1048576 bytes)"),
            "\(truncated(record))"
        )
    }

    @Test func moreThanTenCutsListTheFirstTenInKeyOrderAndCountTheRest() async throws {
        var userInfo: [String: Any] = [:]
        for index in 0..<25 { userInfo[String(format: "list-%02d", index)] = Array(0..<1001) }
        let record = try await record(userInfo: userInfo)
        let expected =
            (0..<10).map { String(format: "userInfo.list-%02d: kept 1000 of 1001 elements (limit 1000)", $0) } + [
                "and 15 more cut(s)"
            ]
        #expect(truncated(record) == expected.joined(separator: "; "))
    }

    @Test func aCallersOwnTruncatedKeyIsKeptBesideJustLogsNote() async throws {
        let record = try await record(userInfo: ["truncated": "mine", "ids": Array(0..<2000)])
        #expect(truncated(record) == "userInfo.ids: kept 1000 of 2000 elements (limit 1000)")
        #expect(record.userInfo["truncated_userInfo"] == "mine")
        // `LogValue.fields(_:)` has no event to put its note in: it puts it in what it returns, by the same rule.
        let fields = LogValue.fields(["truncated": "mine", "ids": Array(0..<2000)])
        #expect(fields["truncated"] == "userInfo.ids: kept 1000 of 2000 elements (limit 1000)")
        #expect(fields["truncated_userInfo"] == "mine")
    }

    @Test func aTenMegabyteMessageIsCutAtACharacterBoundaryAndSaysSo() async throws {
        // 7-byte pattern: 1 MiB falls inside the 4-byte emoji, so the cut must step back to a boundary.
        let message = String(repeating: "aé🍕", count: 10 * 1_048_576 / 7)
        let lines = try await fileLines { $0.info(message) }
        try #require(lines.count == 1)
        let record = lines[0].record
        #expect(record.message.hasSuffix("…[truncated]"))
        let kept = String(record.message.dropLast("…[truncated]".count))
        #expect(message.hasPrefix(kept))
        #expect(kept.utf8.count <= Limit.messageBytes && kept.utf8.count > Limit.messageBytes - 4)
        #expect(truncated(record) == "message: kept \(kept.utf8.count) of \(message.utf8.count) bytes (limit 1048576)")
    }

    @Test func errorUserInfoIsCappedLikeTheCallsAndSaysSo() async throws {
        var userInfo: [String: Any] = [:]
        for index in 0..<5000 { userInfo[String(format: "key-%04d", index)] = index }
        let record = try await record(error: NSError(domain: "hostile", code: 1, userInfo: userInfo), userInfo: [:])
        guard case .array(let links)? = record.userInfo[UserInfoKey.errors], case .object(let link)? = links.first,
            case .object(let errorUserInfo)? = link["user_info"]
        else {
            Issue.record("no errors[0].user_info in \(record.userInfo.keys.sorted())")
            return
        }
        #expect(errorUserInfo.count == 1000)
        #expect(errorUserInfo.keys.sorted() == (0..<1000).map { String(format: "key-%04d", $0) })
        #expect(truncated(record) == "errors[0].user_info: kept 1000 of 5000 keys (limit 1000)")
    }

    // MARK: - Characters and numbers

    @Test func nonFiniteNumbersControlAndBidiCharactersGiveValidJSONInFileAndFlattenedForms() async throws {
        let hostile = [
            "\u{202E}evil\u{202C}", "line\nbreak\rreturn", "nul\u{0}byte", "escape\u{1B}[31mred",
            "separators\u{2028}\u{2029}",
            "quote\"back\\slash", "delete\u{7F}", "bom\u{FEFF}", "tab\tbell\u{7}", "emoji 🇬🇧 é", "\u{85}next line",
        ]
        var userInfo: [String: Any] = [
            "nan": Double.nan, "infinity": Double.infinity, "minusInfinity": -Double.infinity,
            "floatNaN": Float.nan, "floatInfinity": -Float.infinity,
            "nested": ["values": [Double.nan, Double.infinity, 1.5] as [Any]],
            "logValueNaN": LogValue.double(.nan),
            "foundation": NSArray(array: [NSNumber(value: Double.nan), NSNumber(value: -Double.infinity)]),
        ]
        for (index, text) in hostile.enumerated() { userInfo["key \(index) \(text)"] = text }
        let message = hostile.joined(separator: " | ")

        let lines = try await fileLines { $0.warning(message, userInfo: userInfo) }
        try #require(lines.count == 1, "one event is one line")
        let record = lines[0].record
        #expect(record.message == message)
        for (index, text) in hostile.enumerated() {
            #expect(record.userInfo["key \(index) \(text)"] == .string(text), "key \(index) round-trips")
        }
        #expect(record.userInfo["nan"] == "NaN")
        #expect(record.userInfo["infinity"] == "Infinity")
        #expect(record.userInfo["minusInfinity"] == "-Infinity")
        #expect(record.userInfo["floatNaN"] == "NaN")
        #expect(record.userInfo["floatInfinity"] == "-Infinity")
        #expect(record.userInfo["nested"] == ["values": ["NaN", "Infinity", 1.5]])
        #expect(record.userInfo["logValueNaN"] == "NaN")
        #expect(record.userInfo["foundation"] == ["NaN", "-Infinity"])

        // The flattened form (Logstash) of the same record: valid for our reader and for Foundation's.
        let flattened = FlattenedFormat.encode(record)
        #expect(!flattened.contains(UInt8(ascii: "\n")))
        guard case .object(let object) = try JSONReader.parse(bytes: flattened) else {
            Issue.record("not an object")
            return
        }
        #expect(object["message"] == .string(message))
        #expect(object["nested.values"] == ["NaN", "Infinity", 1.5])
        _ = try JSONSerialization.jsonObject(with: Data(flattened))
    }

    // MARK: - Foundation containers without cycles

    @Test func acyclicFoundationContainersAreCapturedLikeTheirSwiftCounterparts() async throws {
        let swift: [String: Any] = [
            "array": [1, "two", true, 2.5, NSNull(), ["inner": 3]] as [Any],
            "dictionary": ["a": 1, "b": [1, 2], "c": "x", "d": false, "e": 7] as [String: Any],
            "numbers": [-1, 0, 1] as [Any],
        ]
        let foundation: [String: Any] = [
            "array": NSMutableArray(array: [1, "two", true, 2.5, NSNull(), NSDictionary(dictionary: ["inner": 3])]),
            "dictionary": NSMutableDictionary(dictionary: [
                "a": 1, "b": NSArray(array: [1, 2]), "c": "x", "d": false, 7 as NSNumber: 7,
            ]),
            "numbers": NSOrderedSet(array: [-1, 0, 1]),
        ]
        var expected = try await record(userInfo: swift).userInfo
        expected["dictionary"] = ["a": 1, "b": [1, 2], "c": "x", "d": false, "7": 7]
        #expect(try await record(userInfo: foundation).userInfo == expected)
    }

    @Test func theSameContainerTwiceIsNotACycle() async throws {
        let shared = NSMutableArray(array: [1, 2])
        let record = try await record(userInfo: ["pair": [shared, shared] as [Any], "again": shared])
        #expect(record.userInfo["pair"] == [[1, 2], [1, 2]])
        #expect(record.userInfo["again"] == [1, 2])
        #expect(record.userInfo[Limit.truncatedKey] == nil)
    }

    // MARK: - Configured limits

    @Test func aLoggersOwnLimitsApplyToEveryPartOfTheEvent() async throws {
        let capture = CapturingDestination()
        let limits = CaptureLimits(
            maximumDepth: 2,
            maximumKeys: 3,
            maximumElements: 2,
            maximumBytes: 1000,
            maximumMessageBytes: 5
        )
        let logger = StructuredLogger(
            configuration: .init(destinations: [.init(capture)], runtime: Fixtures.runtime, captureLimits: limits)
        )
        let error = NSError(domain: "limits", code: 1, userInfo: ["a": 1, "b": 2, "c": 3, "d": 4])
        logger.info(
            "0123456789",
            error: error,
            userInfo: [
                "deep": [[["too deep"]]], "list": [1, 2, 3], "long": String(repeating: "x", count: 2000), "z": 1,
            ]
        )
        try await logger.flush()
        _ = await logger.pipeline.shutdown(timeout: 5)
        let record = try #require(capture.records.first)
        #expect(record.message == "01234…[truncated]")
        #expect(record.userInfo["deep"] == [["<nested deeper than 2: Array<Any>>"]])
        #expect(record.userInfo["list"] == [1, 2])
        #expect(record.userInfo["z"] == nil, "the fourth key in byte order")
        guard case .string(let long)? = record.userInfo["long"] else {
            Issue.record("no long")
            return
        }
        #expect(long.hasSuffix("…[truncated]") && long.utf8.count < 1000)
        #expect(
            truncated(record)
                == [
                    "message: kept 5 of 10 bytes (limit 5)",
                    "userInfo: kept 3 of 4 keys (limit 3)",
                    "userInfo.deep[0][0]: nested deeper than 2",
                    "userInfo.list: kept 2 of 3 elements (limit 2)",
                    "userInfo.long: kept \(long.utf8.count - "…[truncated]".utf8.count) of 2000 bytes (size limit 1000 bytes)",
                    "errors[0].user_info: kept 3 of 4 keys (limit 3)",
                ].joined(separator: "; ")
        )
    }

    @Test func documentedExamplesHold() {
        var capture = ValueCapture(limits: CaptureLimits(maximumElements: 2))
        let fields = capture.fields(["ids": [1, 2, 3]])
        #expect(fields == ["ids": [1, 2]])
        #expect(capture.truncations == ["userInfo.ids: kept 2 of 3 elements (limit 2)"])
        #expect(LogValue(any: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
    }

    /// An `NSNumber` boolean is a boolean wherever it sits: at the top of `userInfo` (a decoded JSON's values), in an
    /// error's user info. It was `1` or `0` unless a Foundation collection held it (review, helper-63).
    @Test func foundationBooleansAreBooleansWhereverTheySit() async throws {
        let decoded = try #require(
            try JSONSerialization.jsonObject(with: Data(#"{"admin": true, "count": 1}"#.utf8)) as? [String: Any]
        )
        let record = try await record(
            error: NSError(domain: "d", code: 1, userInfo: ["retry": NSNumber(value: false)]),
            userInfo: ["flag": NSNumber(value: true), "decoded": decoded, "admin": decoded["admin"] as Any]
        )
        #expect(record.userInfo["flag"] == .bool(true))
        #expect(record.userInfo["admin"] == .bool(true))
        #expect(record.userInfo["decoded"] == .object(["admin": .bool(true), "count": .int(1)]))
        let chain = try #require(record.userInfo["errors"], "\(record.userInfo)")
        let json = String(decoding: JSONWriter.encode(chain), as: UTF8.self)
        #expect(json.contains(#""retry":false"#), "\(json)")
    }

    /// `-0.0` keeps its sign in every form (it was `0.0`).
    @Test func negativeZeroKeepsItsSign() async throws {
        #expect(String(decoding: JSONWriter.encode(.double(-0.0)), as: UTF8.self) == "-0.0")
        #expect(String(decoding: JSONWriter.encode(.double(0.0)), as: UTF8.self) == "0.0")
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let url = folder.appending("zero.log")
        let file = try FileDestination(configuration: .init(url: url))
        let logger = StructuredLogger(configuration: .init(destinations: [.init(file)], runtime: Fixtures.runtime))
        logger.info("zero", userInfo: ["z": -0.0])
        try await logger.flush()
        _ = await logger.pipeline.shutdown(timeout: 5)
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.contains(#""z":-0.0"#), "\(text)")
    }

    /// An error's description, reason, suggestion or underlying error of another type than it names stays in its
    /// `user_info`; it was dropped and said nowhere (review, helper-63).
    @Test func anErrorsWellKnownKeysOfAnotherTypeAreKeptInItsUserInfo() {
        let error = NSError(
            domain: "d",
            code: 1,
            userInfo: [NSUnderlyingErrorKey: "disk full", NSLocalizedFailureReasonErrorKey: 42, "plain": "kept"]
        )
        let link = ErrorChain(error).links[0]
        #expect(link.otherUserInfo[NSUnderlyingErrorKey] == "disk full")
        #expect(link.otherUserInfo[NSLocalizedFailureReasonErrorKey] == .int(42))
        #expect(link.otherUserInfo["plain"] == "kept")
        #expect(link.failureReason == nil)
    }

    /// A `Float` is written as its own shortest text (`0.1`), not as the `Double` it widens to
    /// (`0.10000000149011612`: review, helper-63), captured or typed.
    @Test func aFloatIsWrittenAsItsOwnShortestText() {
        #expect(LogValue.fields(["f": Float(0.1), "g": Float(1.1)]) == ["f": .double(0.1), "g": .double(1.1)])
        #expect(LogValue(Float(0.1)) == .double(0.1))
        #expect(LogValue(Float.infinity) == .double(.infinity))
        #expect(LogValue(0.1 as Double) == .double(0.1))
    }

    /// A high surrogate escape followed by an escape that is not its partner: the surrogate alone is replaced and the
    /// next character kept (it was eaten: review, helper-63). Only text JustLog did not write has one.
    @Test func anUnpairedHighSurrogateEscapeKeepsTheEscapeAfterIt() throws {
        #expect(try JSONReader.parse(#""\uD83D\u0041""#) == .string("\u{FFFD}A"))
        #expect(try JSONReader.parse(#""\uD83D\uDE00""#) == .string("\u{1F600}"))
        #expect(try JSONReader.parse(#""\uD83Dx""#) == .string("\u{FFFD}x"))
    }

    /// Keys of other types that print the same text — `1` and `"1"` — are all kept, the same way in every run: the
    /// last one written won, and which one changed with the dictionary's hash order (review, helper-63).
    @Test func keysThatPrintTheSameAreAllKeptTheSameWayInEveryRun() {
        let mixed: [AnyHashable: Any] = [1: "int", "1": "string", "1_2": "taken", true: "bool"]
        let expected: LogValue = ["1": "int", "1_2": "taken", "1_3": "string", "true": "bool"]
        #expect(LogValue.fields(["mixed": mixed])["mixed"] == expected)
        let foundation = NSDictionary(dictionary: [NSNumber(value: 7): "number", "7": "string"])
        guard case .object(let members)? = LogValue.fields(["ns": foundation])["ns"] else {
            Issue.record("not an object")
            return
        }
        #expect(Set(members.keys) == ["7", "7_2"])
        #expect(Set(members.values) == ["number", "string"])
    }
}
