/// Writes bytes into memory reserved beforehand (see ``Swift/Array/write(atMost:_:)``): a store and an
/// increment per byte, where appending to an `[UInt8]` checks uniqueness and capacity every time. The formats
/// that run once per event per destination write through it.
///
/// The reservation is the writer's contract: whoever reserves computes an upper bound of what will be written
/// (JSON escaping at most sextuples a byte: `\u00XX`), and the writer checks it only in debug builds.
package struct RawWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    /// The bytes written.
    package private(set) var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    @inline(__always)
    package mutating func byte(_ value: UInt8) {
        assert(count < capacity, "RawWriter: past the reserved bytes")
        base[count] = value
        count += 1
    }

    @inline(__always)
    package mutating func bytes(_ source: UnsafeRawBufferPointer) {
        assert(count + source.count <= capacity, "RawWriter: past the reserved bytes")
        let length = source.count
        guard let address = source.baseAddress else { return }
        let target = UnsafeMutableRawPointer(base + count)
        // Short runs (keys, small values, times, punctuation) as loads and stores that overlap, exactly within
        // both buffers: a call to memcpy costs more than they do. (A loop of byte copies would become that call.)
        if length > 16, length <= 32 {
            let words = (
                address.loadUnaligned(as: UInt64.self), address.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                address.loadUnaligned(fromByteOffset: length - 16, as: UInt64.self),
                address.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self)
            )
            target.storeBytes(of: words.0, as: UInt64.self)
            target.storeBytes(of: words.1, toByteOffset: 8, as: UInt64.self)
            target.storeBytes(of: words.2, toByteOffset: length - 16, as: UInt64.self)
            target.storeBytes(of: words.3, toByteOffset: length - 8, as: UInt64.self)
        } else if length >= 8, length <= 16 {
            let head = address.loadUnaligned(as: UInt64.self)
            let tail = address.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self)
            target.storeBytes(of: head, as: UInt64.self)
            target.storeBytes(of: tail, toByteOffset: length - 8, as: UInt64.self)
        } else if length >= 4, length < 8 {
            let head = address.loadUnaligned(as: UInt32.self)
            let tail = address.loadUnaligned(fromByteOffset: length - 4, as: UInt32.self)
            target.storeBytes(of: head, as: UInt32.self)
            target.storeBytes(of: tail, toByteOffset: length - 4, as: UInt32.self)
        } else if length > 0, length < 4 {
            // 1 to 3 bytes: the first, the middle one and the last (some of them the same byte).
            let middle = length >> 1
            let bytes = (
                address.load(as: UInt8.self), address.load(fromByteOffset: middle, as: UInt8.self),
                address.load(fromByteOffset: length - 1, as: UInt8.self)
            )
            target.storeBytes(of: bytes.0, as: UInt8.self)
            target.storeBytes(of: bytes.1, toByteOffset: middle, as: UInt8.self)
            target.storeBytes(of: bytes.2, toByteOffset: length - 1, as: UInt8.self)
        } else if length > 32 {
            target.copyMemory(from: address, byteCount: length)
        }
        count += length
    }

    @inline(__always)
    package mutating func bytes(_ source: [UInt8]) {
        source.withUnsafeBytes { bytes($0) }
    }

    @inline(__always)
    package mutating func bytes(_ source: StaticString) {
        bytes(UnsafeRawBufferPointer(start: source.utf8Start, count: source.utf8CodeUnitCount))
    }

    /// The 8 bytes of `word` from its least significant up: text assembled in a register.
    @inline(__always)
    package mutating func word(_ word: UInt64) {
        assert(count + 8 <= capacity, "RawWriter: past the reserved bytes")
        UnsafeMutableRawPointer(base + count).storeBytes(of: word.littleEndian, as: UInt64.self)
        count += 8
    }

    /// Stores the 8 bytes of `word` so that they end at `end` (over bytes written before, which they repeat) and
    /// moves the end of what is written there.
    @inline(__always)
    package mutating func overwriteWord(_ word: UInt64, endingAt end: Int) {
        assert(end >= 8 && end <= capacity && end >= count, "RawWriter: outside the reserved bytes")
        UnsafeMutableRawPointer(base + end - 8).storeBytes(of: word.littleEndian, as: UInt64.self)
        count = end
    }

    /// Stores the 4 bytes of `word` so that they end at `end` (see ``overwriteWord(_:endingAt:)-(UInt64,_)``).
    @inline(__always)
    package mutating func overwriteWord(_ word: UInt32, endingAt end: Int) {
        assert(end >= 4 && end <= capacity && end >= count, "RawWriter: outside the reserved bytes")
        UnsafeMutableRawPointer(base + end - 4).storeBytes(of: word.littleEndian, as: UInt32.self)
        count = end
    }

    /// The 4 bytes of `word` from its least significant up.
    @inline(__always)
    package mutating func word(_ word: UInt32) {
        assert(count + 4 <= capacity, "RawWriter: past the reserved bytes")
        UnsafeMutableRawPointer(base + count).storeBytes(of: word.littleEndian, as: UInt32.self)
        count += 4
    }
}

/// Zeros to lengthen an array by before writing into it in place.
private let zeros = [UInt8](repeating: 0, count: 1 << 16)

extension Array where Element == UInt8 {
    /// Writes at most `bound` bytes at the end of the array with `body`, in place; keeps them if `body` returns
    /// `true`, and leaves the array as it was otherwise. Returns `body`'s answer.
    package mutating func write(atMost bound: Int, _ body: (inout RawWriter) -> Bool) -> Bool {
        // At least one byte, so that the writer's memory has an address.
        let bound = Swift.max(bound, 1)
        let start = count
        appendZeros(bound)
        var written = 0
        let kept = withUnsafeMutableBufferPointer { buffer in
            var writer = RawWriter(UnsafeMutableBufferPointer(rebasing: buffer[start..<start + bound]))
            defer { written = writer.count }
            return body(&writer)
        }
        removeLast(kept ? bound - written : bound)
        return kept
    }

    /// Lengthens the array by `count` zeros, copied a chunk at a time.
    fileprivate mutating func appendZeros(_ count: Int) {
        var remaining = count
        while remaining > 0 {
            let chunk = Swift.min(remaining, zeros.count)
            zeros.withUnsafeBufferPointer { append(contentsOf: UnsafeBufferPointer(rebasing: $0[..<chunk])) }
            remaining -= chunk
        }
    }
}

/// Bytes written one after another by ``RawWriter``s, in place: a buffer that is zero-filled only when it grows,
/// and emptied without giving its memory back. What a destination formats its lines into, batch after batch.
package struct OutputBuffer: Sendable {
    /// The memory: `count` bytes written, the rest reserved.
    private var storage: [UInt8] = []
    /// The bytes written.
    package private(set) var count = 0

    package init() {}

    /// The bytes reserved, written or not.
    package var capacity: Int { storage.count }

    /// Writes at most `bound` bytes after those already written with `body`; keeps them if `body` returns `true`.
    /// Returns `body`'s answer.
    package mutating func write(atMost bound: Int, _ body: (inout RawWriter) -> Bool) -> Bool {
        // At least one byte, so that the writer's memory has an address.
        let bound = Swift.max(bound, 1)
        if storage.count - count < bound { grow(toAtLeast: count + bound) }
        let start = count
        var written = 0
        let kept = storage.withUnsafeMutableBufferPointer { buffer in
            var writer = RawWriter(UnsafeMutableBufferPointer(rebasing: buffer[start..<start + bound]))
            defer { written = writer.count }
            return body(&writer)
        }
        if kept { count += written }
        return kept
    }

    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        _ = write(atMost: bytes.count) { writer in
            writer.bytes(bytes)
            return true
        }
    }

    package mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    package mutating func append(_ byte: UInt8) {
        _ = write(atMost: 1) { writer in
            writer.byte(byte)
            return true
        }
    }

    /// Forgets what was written, keeping the memory.
    package mutating func removeAll() { count = 0 }

    /// Forgets what was written after the first `count` bytes.
    package mutating func removeAll(after count: Int) { self.count = Swift.min(self.count, Swift.max(0, count)) }

    package func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    /// A copy of the bytes written.
    package var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    private mutating func grow(toAtLeast minimum: Int) {
        storage.appendZeros(Swift.max(minimum, 2 * storage.count, 4096) - storage.count)
    }
}
