import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An overlay mounted on a folder, its writable upper layer on another mounted disk — a container's file system
/// (Docker's upper layer is usually on ext4, Podman's on btrfs on Fedora), which `statfs` calls overlayfs whatever
/// is under it. Root only; unmounted by ``unmount()`` (before the disk under it).
///
/// ```swift
/// let disk = try LoopMountedBtrfs(at: folder.path + "/disk", image: folder.path + "/btrfs.image")
/// defer { disk.unmount() }
/// let overlay = try OverlayMount(at: folder.path + "/overlay", upperOn: disk.path, lower: folder.path + "/lower")
/// defer { overlay.unmount() }
/// ```
public struct OverlayMount: Sendable {
    /// The folder it is mounted on.
    public let path: String

    /// Why an overlay can't be mounted here, or `nil` if it can.
    public static var unavailability: String? {
        if let reason = TmpfsMount.mountingUnavailability { return reason }
        let known = (try? String(contentsOfFile: "/proc/filesystems", encoding: .utf8)) ?? ""
        // A module not loaded yet is loaded by the mount.
        if !known.contains("\toverlay\n"), access("/sys/module/overlay", F_OK) != 0,
            !FileManager.default.fileExists(atPath: "/lib/modules/\(kernelRelease)/kernel/fs/overlayfs")
        {
            return "the kernel has no overlay file system"
        }
        return nil
    }

    /// Mounts an overlay on `path` whose upper layer (and work folder) are made in `disk`, and whose lower layer is
    /// `lower`; the three folders are created if missing.
    public init(at path: String, upperOn disk: String, lower: String) throws {
        for folder in [path, lower, disk + "/upper", disk + "/work"] { mkdir(folder, 0o700) }
        let result = "lowerdir=\(lower),upperdir=\(disk)/upper,workdir=\(disk)/work".withCString { options in
            mount("overlay", path, "overlay", 0, options)
        }
        guard result == 0 else {
            throw CocoaError(
                .fileWriteUnknown,
                userInfo: [NSLocalizedDescriptionKey: "mount overlay on \(path): \(String(cString: strerror(errno)))"]
            )
        }
        self.path = path
    }

    public func unmount() {
        if umount(path) != 0 { _ = umount2(path, Int32(MNT_DETACH)) }
    }

    private static var kernelRelease: String {
        var name = utsname()
        uname(&name)
        return withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
