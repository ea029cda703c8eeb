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
    data.withUnsafeBytes { bytes in
        guard let base = bytes.baseAddress else { return }
        var start = 0
        while start < bytes.count {
            let found = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
            let end = found.map { base.distance(to: UnsafeRawPointer($0)) } ?? bytes.count
            if end > start { body(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), found != nil) }
            start = end + 1
        }
    }
}
