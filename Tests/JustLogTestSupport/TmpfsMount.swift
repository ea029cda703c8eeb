import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A tmpfs mounted on an existing folder (root only: the tests that use one are enabled only as root), for a real
/// full disk; unmounted by ``unmount()``.
///
/// ```swift
/// let disk = try TmpfsMount(at: folder.file("disk"), size: "1m")
/// defer { disk.unmount() }
/// ```
public struct TmpfsMount: Sendable {
    /// The folder it is mounted on.
    public let path: String

    /// Mounts a tmpfs of `size` (`mount`'s syntax: `"100k"`, `"1m"`) on `path`, creating the folder if missing.
    public init(at path: String, size: String) throws {
        mkdir(path, 0o700)
        let result = "size=\(size),mode=0700".withCString { options in
            mount("tmpfs", path, "tmpfs", 0, options)
        }
        guard result == 0 else { throw Self.error("mount tmpfs on \(path)") }
        self.path = path
    }

    /// Gives the disk a new size: space returns, without unmounting.
    public func resize(to size: String) throws {
        let result = "size=\(size),mode=0700".withCString { options in
            mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT), options)
        }
        guard result == 0 else { throw Self.error("remount tmpfs on \(path)") }
    }

    public func unmount() {
        if umount(path) != 0 {
            // Something still holds a file open: detach now, the kernel frees it when the last one closes.
            _ = umount2(path, Int32(MNT_DETACH))
        }
    }

    private static func error(_ what: String) -> CocoaError {
        CocoaError(
            .fileWriteUnknown,
            userInfo: [NSLocalizedDescriptionKey: "\(what): \(String(cString: strerror(errno)))"]
        )
    }
}
