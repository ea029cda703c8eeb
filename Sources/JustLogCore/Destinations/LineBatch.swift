/// Lines for a file, back to back in one buffer, and where each ends: a batch is written with one `write(2)`
/// and no allocation per line, and a write cut short is cut back to its last whole line.
struct LineBatch: Sendable {
    /// The lines' bytes, each line ending with `\n`.
    var bytes = OutputBuffer()
    /// The offset in ``bytes`` just past each line.
    var ends: [Int] = []

    init() {}

    init(line: [UInt8]) {
        bytes.append(line)
        ends = [line.count]
    }

    var count: Int { ends.count }

    /// Where the line `index` starts.
    func start(of index: Int) -> Int { index == 0 ? 0 : ends[index - 1] }

    func length(of index: Int) -> Int { ends[index] - start(of: index) }

    /// Ends the line written into ``bytes`` since the last one ended.
    mutating func endLine() { ends.append(bytes.count) }

    /// Forgets every line, keeping the buffers for the next batch.
    mutating func removeAll() {
        bytes.removeAll()
        ends.removeAll(keepingCapacity: true)
    }
}
