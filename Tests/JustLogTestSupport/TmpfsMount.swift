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

    /// Why nothing can be mounted here, or `nil` if a tmpfs could be (tried once, on a folder of its own): not root,
    /// or a container that does not allow mounting (no `CAP_SYS_ADMIN`, a seccomp filter).
    public static let mountingUnavailability: String? = {
        if geteuid() != 0 { return "mounting a file system needs root" }
        var template = Array((NSTemporaryDirectory() + "/justlog-mount-probe.XXXXXX").utf8CString)
        guard let folder = mkdtemp(&template).map({ String(cString: $0) }) else { return "can't make a folder" }
        defer { rmdir(folder) }
        let mounted = mount("tmpfs", folder, "tmpfs", 0, "size=64k")
        let reason = String(cString: strerror(errno))
        guard mounted == 0 else { return "mounting a tmpfs was refused (\(reason)): a container without mount rights?" }
        if umount(folder) != 0 { _ = umount2(folder, Int32(MNT_DETACH)) }
        return nil
    }()

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
