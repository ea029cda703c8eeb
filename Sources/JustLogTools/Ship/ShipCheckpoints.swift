import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How far `justlog ship` got in each input file, saved as `checkpoints.json` in the spool folder.
///
/// A file is known by its device and inode — not its path — so a file shipped as `app.log` and since
/// rotated to `app.log.1` is recognised and not sent again. A hash of its first bytes guards against an
/// inode reused by a new file. The offset counts bytes of complete lines already appended to the spool;
/// the spool is durable, so those lines are done even if they were not delivered yet.
///
/// Saved atomically (written to a temporary file, then renamed), after the lines it covers are spooled:
/// a crash between the two re-sends those lines on the next run (same `event_id`s), never skips them.
struct ShipCheckpoints: Codable, Equatable {
    struct Entry: Codable, Equatable {
        /// The path it had when last shipped (for people reading the file).
        var path: String
        var device: UInt64
        var inode: UInt64
        /// Bytes of complete lines already spooled.
        var offset: Int
        /// Lines in those bytes.
        var line: Int
        /// FNV-1a 64 of the first `min(offset, 4096)` bytes, hexadecimal.
        var head: String
    }

    var version = 1
    var files: [Entry] = []

    static let fileName = "checkpoints.json"
    static let headBytes = 4096

    /// Loads the checkpoints in `folder`; none if there is no file yet.
    static func load(folder: String) throws -> ShipCheckpoints {
        let path = folder + "/" + fileName
        guard let data = FileManager.default.contents(atPath: path) else { return ShipCheckpoints() }
        let notOurs = ToolError(
            "\(path) is not a checkpoint file written by justlog ship: delete it to ship the files from the start"
        )
        let checkpoints: ShipCheckpoints
        do {
            checkpoints = try JSONDecoder().decode(ShipCheckpoints.self, from: data)
        } catch {
            throw notOurs
        }
        // The file was edited: a negative offset trapped reading the file's head (review, helper-48), a line number
        // near `Int.max` counting on (helper-50). Every line takes a byte at least.
        guard checkpoints.files.allSatisfy({ $0.offset >= 0 && (0...$0.offset).contains($0.line) }) else {
            throw notOurs
        }
        return checkpoints
    }

    /// Writes the checkpoints atomically (owner-only).
    func save(folder: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        let path = folder + "/" + Self.fileName
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ToolError("can't write \(temporary): \(String(cString: strerror(errno))); check the spool folder")
        }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        _ = close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            throw ToolError(
                "can't save \(path): \(String(cString: strerror(errno))); check the spool folder and the free disk space"
            )
        }
    }

    /// Where to resume in the file open as `reader`: its entry if it is the same file, else `nil`.
    func entry(device: UInt64, inode: UInt64, path: String) -> Entry? {
        guard let entry = files.first(where: { $0.device == device && $0.inode == inode }) else { return nil }
        guard entry.head == Self.head(of: path, upTo: entry.offset) else { return nil }
        return entry
    }

    mutating func update(_ entry: Entry) {
        if let index = files.firstIndex(where: { $0.device == entry.device && $0.inode == entry.inode }) {
            files[index] = entry
        } else {
            files.append(entry)
        }
    }

    /// The hash of the first `min(offset, 4096)` bytes of `path`; `""` if they can't be read.
    static func head(of path: String, upTo offset: Int) -> String {
        let count = min(offset, headBytes)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { _ = close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, 0) }
        guard read == count else { return "" }
        return String(fnv1a64(bytes), radix: 16)
    }

    static func fnv1a64(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }
}
