public import Foundation

/// A fresh folder under the system's temporary folder, deleted (with its content) when the value is
/// released or ``remove()`` is called.
///
/// ```swift
/// let directory = try TemporaryDirectory(prefix: "spool")
/// let file = directory.path + "/cursor"
/// ```
public final class TemporaryDirectory: @unchecked Sendable {
    /// The folder's absolute path.
    public let path: String
    private let lock = NSLock()
    private var removed = false

    /// Creates the folder (owner-only) with `mkdtemp`, in `parent` (by default the system's temporary folder).
    public init(in parent: String = NSTemporaryDirectory(), prefix: String = "justlog") throws {
        var template = Array((parent + "/\(prefix).XXXXXX").utf8CString)
        guard let created = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "mkdtemp failed: errno \(errno)"])
        }
        path = URL(fileURLWithPath: String(cString: created)).standardizedFileURL.path
    }

    deinit { remove() }

    /// A path inside the folder.
    public func file(_ name: String) -> String { path + "/" + name }

    /// The folder as a file URL.
    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// A URL inside the folder.
    public func appending(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Deletes the folder and everything in it; later calls do nothing.
    public func remove() {
        lock.lock()
        defer { lock.unlock() }
        guard !removed else { return }
        removed = true
        try? FileManager.default.removeItem(atPath: path)
    }
}
