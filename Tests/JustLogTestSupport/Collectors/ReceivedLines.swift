import Foundation

// Reading what a collector wrote. The tests poll these every 10 ms while up to 100,000 events arrive, in a build for
// debugging: `split` there (generic, unspecialized) kept most of a core busy for minutes in the collector tests,
// starving the others. These walk the bytes with `memchr`.

/// The non-empty lines of the file at `path`, split at `\n` (the last one may still be being written); `[]` if it
/// can't be read.
public func lines(ofFileAt path: String) -> [String] {
    var lines: [String] = []
    forEachLine(ofFileAt: path) { line, _ in lines.append(String(decoding: line, as: UTF8.self)) }
    return lines
}

/// How many non-empty lines ended by `\n` the file at `path` holds (0 if it can't be read): a line still being
/// written is not counted.
public func completeLineCount(ofFileAt path: String) -> Int {
    var count = 0
    forEachLine(ofFileAt: path) { _, complete in if complete { count += 1 } }
    return count
}

/// Calls `body` with each non-empty line of the file at `path` (without its `\n`), and whether a `\n` ends it.
private func forEachLine(ofFileAt path: String, _ body: (UnsafeRawBufferPointer, Bool) -> Void) {
    guard let data = FileManager.default.contents(atPath: path) else { return }
    data.withUnsafeBytes { _ = forEachLine(in: $0, body) }
}

/// Calls `body` with each non-empty line of `bytes` (without its `\n`), and whether a `\n` ends it; returns how many
/// bytes the lines ended by `\n` take.
private func forEachLine(in bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer, Bool) -> Void) -> Int {
    guard let base = bytes.baseAddress else { return 0 }
    var start = 0
    var complete = 0
    while start < bytes.count {
        let found = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
        let end = found.map { base.distance(to: UnsafeRawPointer($0)) } ?? bytes.count
        if end > start { body(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), found != nil) }
        if found != nil { complete = end + 1 }
        start = end + 1
    }
    return complete
}

/// A file a collector appends to, read as it grows: each ``forEachNewLine(_:)`` reads only the whole lines appended
/// since the last — what a poll every 10 ms needs, where reading the whole file each time (hundreds of thousands of
/// lines by the end of a run) held a thread of the test pool for most of a minute.
public final class GrowingFile {
    public let path: String
    private var offset: UInt64 = 0

    public init(_ path: String) { self.path = path }

    /// Calls `body` with each non-empty line ended by `\n` appended since the last call (without its `\n`); a line
    /// still being written is read once it ends.
    public func forEachNewLine(_ body: (UnsafeRawBufferPointer) -> Void) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: offset)) != nil, let data = try? handle.readToEnd(), !data.isEmpty else {
            return
        }
        let consumed = data.withUnsafeBytes { bytes in
            forEachLine(in: bytes) { line, complete in if complete { body(line) } }
        }
        offset += UInt64(consumed)
    }

    /// ``forEachNewLine(_:)``'s lines, as strings.
    public func newLines() -> [String] {
        var lines: [String] = []
        forEachNewLine { lines.append(String(decoding: $0, as: UTF8.self)) }
        return lines
    }
}
