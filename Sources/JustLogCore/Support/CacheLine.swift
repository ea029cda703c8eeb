/// Memory of its own cache lines, for a word that threads write (a lock's, a counter) or that every log call
/// reads (a gate): two such words allocated one after the other share a line (the allocator packs small blocks
/// together), and then a thread writing one takes the line from every core reading or writing the other — a cache
/// miss for each, on every call, measured in BENCHMARKS.md part 16.
///
/// 128 bytes: the line and the neighbour that x86's adjacent-line prefetcher fetches with it.
package enum CacheLine {
    /// The bytes each allocation takes, and its alignment.
    package static let size = 128

    /// Allocates `count` values (at most ``size`` bytes in all) alone on their lines, each initialized to `value`.
    package static func allocate<Value>(repeating value: Value, count: Int = 1) -> UnsafeMutablePointer<Value> {
        precondition(count > 0 && MemoryLayout<Value>.stride * count <= size, "more than a cache line's worth")
        let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: size)
        return raw.initializeMemory(as: Value.self, repeating: value, count: count)
    }

    /// Frees what ``allocate(repeating:count:)`` returned (the values must be trivial, or deinitialized).
    package static func deallocate<Value>(_ pointer: UnsafeMutablePointer<Value>) {
        UnsafeMutableRawPointer(pointer).deallocate()
    }
}
