#if os(Linux)
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the kernel reports happening to the files of one folder (inotify, Linux): the events of `mask` since the
/// watch began, read without waiting. The kernel folds an event identical to the one before it, unread, into it:
/// watch two kinds that alternate (`IN_OPEN | IN_CLOSE_WRITE`) to count each of them.
///
/// ```swift
/// let watch = try FolderWatch(folder.path, mask: UInt32(IN_CREATE))
/// // … make files …
/// let created = watch.events().map(\.name)
/// ```
public final class FolderWatch {
    private let descriptor: Int32

    /// Starts watching `folder` for the events of `mask` (`IN_CREATE`, `IN_OPEN`, …).
    public init(_ folder: String, mask: UInt32) throws {
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0, inotify_add_watch(descriptor, folder, mask) >= 0 else {
            throw CocoaError(
                .fileReadUnknown,
                userInfo: [NSLocalizedDescriptionKey: "inotify on \(folder): \(String(cString: strerror(errno)))"]
            )
        }
    }

    deinit { close(descriptor) }

    /// The events reported since the last call (or since the watch began), in order: each one's mask and the name
    /// of the file it concerns.
    public func events() -> [(mask: UInt32, name: String)] {
        var events: [(mask: UInt32, name: String)] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let (mask, length, name) = buffer.withUnsafeBytes { raw -> (UInt32, Int, String) in
                    let mask = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    let start = offset + MemoryLayout<inotify_event>.size
                    let name = String(decoding: raw[start..<(start + length)].prefix { $0 != 0 }, as: UTF8.self)
                    return (mask, length, name)
                }
                events.append((mask, name))
                offset += MemoryLayout<inotify_event>.size + length
            }
        }
        return events
    }
}
#endif
