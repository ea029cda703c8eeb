import Foundation
import Testing

@testable import JustLogCore

/// The fast lane reads a call's `userInfo` and strings where they lie (``DictionaryEntries``, ``StringLayout``):
/// what it reads must be what the standard library's own iteration and views give, for every size and form.
@Suite struct InPlaceReadingTests {
    // MARK: - Dictionary entries

    /// The entries the in-place walk visits, as (key, the value's description), in its order; `nil` when it
    /// declined the storage.
    private func walked(_ dictionary: [String: Any]) -> [(String, String)]? {
        var entries: [(String, String)] = []
        let answer = DictionaryEntries.visit(dictionary) { key, value in
            entries.append((key.pointee, String(describing: value.assumingMemoryBound(to: Any.self).pointee)))
            return true
        }
        guard let answer else { return nil }
        #expect(answer, "a walk that every entry let go on says so")
        return entries
    }

    private func iterated(_ dictionary: [String: Any]) -> [(String, String)] {
        dictionary.map { ($0.key, String(describing: $0.value)) }
    }

    @Test(arguments: [1, 2, 3, 7, 8, 48, 63, 64, 65, 96, 127, 128, 129, 500, 3_000])
    func everyEntryIsVisitedOnceInTheDictionarysOwnOrder(count: Int) throws {
        var dictionary: [String: Any] = [:]
        for index in 0..<count {
            // Small and large keys; values of several types, strings small and large.
            let key = index % 3 == 0 ? "key \(index)" : "a key long enough to live on the heap \(index)"
            dictionary[key] = index % 2 == 0 ? index : "value \(index) " + String(repeating: "✓", count: index % 9)
        }
        let walk = try #require(walked(dictionary), "a native dictionary's storage is read in place")
        let expected = iterated(dictionary)
        #expect(walk.map(\.0) == expected.map(\.0))
        #expect(walk.map(\.1) == expected.map(\.1))
    }

    @Test func entriesRemovedAndAddedAgainAreVisitedAsTheDictionaryHoldsThem() throws {
        var dictionary: [String: Any] = [:]
        for index in 0..<200 { dictionary["k\(index)"] = index }
        for index in stride(from: 0, to: 200, by: 3) { dictionary["k\(index)"] = nil }
        for index in 0..<20 { dictionary["again \(index)"] = "v\(index)" }
        let walk = try #require(walked(dictionary))
        #expect(walk.map(\.0) == iterated(dictionary).map(\.0))
        #expect(walk.count == dictionary.count)
    }

    @Test func aCopyThatSharesItsStorageAndOneReservedLargerAreBothRead() throws {
        let original: [String: Any] = ["a": 1, "b": "two", "c": 3.5]
        let shared = original
        var reserved = original
        reserved.reserveCapacity(1_000)
        #expect(try #require(walked(shared)).map(\.0) == iterated(original).map(\.0))
        #expect(try #require(walked(reserved)).map(\.0) == iterated(reserved).map(\.0))
    }

    @Test func theWalkStopsAtTheFirstEntryItsBodyRefuses() throws {
        let dictionary: [String: Any] = ["a": 1, "b": 2, "c": 3, "d": 4]
        var visited = 0
        let answer = DictionaryEntries.visit(dictionary) { _, _ in
            visited += 1
            return visited < 2
        }
        #expect(answer == false)
        #expect(visited == 2)
    }

    @Test func anEmptyDictionaryHasNothingToVisit() {
        // The empty singleton's storage is declined or walked as empty; either way nothing is visited.
        var emptied: [String: Any] = ["a": 1]
        emptied["a"] = nil
        for dictionary in [[:], emptied] {
            var visited = 0
            let answer = DictionaryEntries.visit(dictionary) { _, _ in
                visited += 1
                return true
            }
            #expect(answer != false)
            #expect(visited == 0)
        }
    }

    // MARK: - Strings

    /// Strings of every form a Linux program makes: small (up to 15 bytes, ASCII or not), a literal (immortal,
    /// its bytes in the binary), native on the heap, built from Foundation, from a substring, from bytes.
    static func strings() -> [String] {
        let heap = String(repeating: "heap ✓ ", count: 9)
        return [
            "", "a", "fifteen bytes!!", "naïve ✓", "🎉🎉🎉", "sixteen bytes!!!",
            "a literal long enough to be kept in the binary, not inline",
            heap, heap + "more", String(heap.dropFirst(3)), String("x".utf8.map { _ in "y" }),
            NSString(string: "a Foundation string, long enough for the heap").description,
            String(NSString(format: "%@ %d", "formatted", 42)),
            String(decoding: [0x68, 0x69, 0xE2, 0x9C, 0x93], as: UTF8.self),
            String(unsafeUninitializedCapacity: 40) { buffer in
                for index in 0..<40 { buffer[index] = UInt8(ascii: "a") + UInt8(index % 26) }
                return 40
            },
            "\u{0}\u{1}control\u{7F}", String(repeating: "é", count: 7), String(repeating: "é", count: 8),
        ]
    }

    @Test func theRecordWriterWritesEachFormsBytesAfterTheirCount() {
        for string in Self.strings() {
            let expected = Array(string.utf8)
            // Room for the whole string, and a buffer too small for it (only counted, not written).
            for capacity in [1024, 4 + expected.count, 3] {
                var bytes = [UInt8](repeating: 0xEE, count: capacity)
                let (count, length) = bytes.withUnsafeMutableBytes { buffer in
                    var writer = JournalCodec.RecordWriter(buffer)
                    let length = writer.string(string)
                    return (writer.count, length)
                }
                #expect(length == expected.count, "\(string.debugDescription)")
                #expect(count == 4 + expected.count, "\(string.debugDescription)")
                guard capacity >= 4 + expected.count else {
                    #expect(bytes == [UInt8](repeating: 0xEE, count: capacity), "nothing written past the capacity")
                    continue
                }
                let written = bytes[0..<4].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
                #expect(written == expected.count)
                #expect(Array(bytes[4..<(4 + expected.count)]) == expected, "\(string.debugDescription)")
            }
        }
    }

    @Test func aStringIsReadInPlaceFromItsPointerAsFromItsValue() {
        for string in Self.strings() {
            var copy = string
            let fromPointer = withUnsafePointer(to: &copy) { pointer in
                var bytes = [UInt8](repeating: 0, count: 1024)
                let length = bytes.withUnsafeMutableBytes { buffer in
                    var writer = JournalCodec.RecordWriter(buffer)
                    return writer.string(at: pointer)
                }
                return Array(bytes[4..<(4 + length)])
            }
            #expect(fromPointer == Array(string.utf8), "\(string.debugDescription)")
        }
    }

    @Test func smallAndContiguousStringsAreReadInPlaceOnThisPlatform() {
        // The in-place layouts must be recognised here (else the fast lane silently pays the library's price).
        #if _endian(little) && (arch(x86_64) || arch(arm64))
        guard case .small = StringLayout("userID") else {
            Issue.record("a small string was not read in place")
            return
        }
        let heap = String(repeating: "heap ✓ ", count: 9)
        guard case .contiguous(_, let count) = StringLayout(heap) else {
            Issue.record("a native string was not read in place")
            return
        }
        #expect(count == heap.utf8.count)
        guard case .contiguous = StringLayout("a literal long enough to be kept in the binary, not inline") else {
            Issue.record("a literal was not read in place")
            return
        }
        #endif
    }
}
