import JustLogCore
import Testing

// The words every log call writes or reads (locks, the fill count, the gates) each get cache lines of their own:
// packed side by side by the allocator, a thread taking a lock took the line another core was reading the level gate
// from (BENCHMARKS.md part 16).
@Suite struct CacheLineTests {
    @Test func wordsAllocatedOneAfterAnotherNeverShareALine() {
        let words = (0..<16).map { _ in CacheLine.allocate(repeating: UInt32(7)) }
        defer {
            for word in words { CacheLine.deallocate(word) }
        }
        let lines = Set(words.map { UInt(bitPattern: $0) / UInt(CacheLine.size) })
        #expect(lines.count == words.count)
        for word in words {
            #expect(UInt(bitPattern: word) % UInt(CacheLine.size) == 0)
            #expect(word.pointee == 7)
        }
    }

    @Test func severalValuesFitTheirLinesInitialized() {
        let pair = CacheLine.allocate(repeating: UInt32(3), count: 2)
        defer { CacheLine.deallocate(pair) }
        #expect(pair[0] == 3 && pair[1] == 3)
        #expect(UInt(bitPattern: pair) % UInt(CacheLine.size) == 0)
    }
}
