import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A fresh btrfs of 128 MiB (about the smallest `mkfs.btrfs` makes with its defaults), in an image file
/// loop-mounted on a folder: a real copy-on-write file system, to fill up on purpose. Needs root, btrfs-progs and
/// a loop device (``isAvailable``); unmounted, and its image deleted, by ``unmount()``.
public struct LoopMountedBtrfs: Sendable {
    /// The folder it is mounted on.
    public let path: String
    private let image: String

    /// Why a btrfs can't be mounted here, or `nil` if it can.
    public static var unavailability: String? {
        if let reason = TmpfsMount.mountingUnavailability { return reason }
        if mkfs == nil { return "mkfs.btrfs is not installed (apt-get install btrfs-progs)" }
        if access("/dev/loop-control", F_OK) != 0 { return "no loop device (/dev/loop-control)" }
        return nil
    }

    /// Whether ``unavailability`` is `nil`.
    public static var isAvailable: Bool { unavailability == nil }

    private static var mkfs: String? {
        ["/usr/sbin/mkfs.btrfs", "/sbin/mkfs.btrfs", "/usr/bin/mkfs.btrfs"].first { access($0, X_OK) == 0 }
    }

    /// Makes the file system in `image`, a file created here, and mounts it on `path` (created if missing).
    public init(at path: String, image: String) throws {
        guard let mkfs = Self.mkfs else { throw Self.error(Self.unavailability ?? "no mkfs.btrfs") }
        mkdir(path, 0o700)
        guard FileManager.default.createFile(atPath: image, contents: nil) else { throw Self.error("create \(image)") }
        guard truncate(image, 128 << 20) == 0 else { throw Self.error("size \(image)") }
        try Self.run(mkfs, ["-q", "-f", image])
        try Self.run("/bin/mount", ["-o", "loop", image, path])
        self.path = path
        self.image = image
    }

    /// Unmounts it (detaching it if something still holds a file open) and deletes the image.
    public func unmount() {
        if umount(path) != 0 { _ = umount2(path, Int32(MNT_DETACH)) }
        unlink(image)
    }

    private static func run(_ program: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw error("\(program) \(arguments.joined(separator: " ")): \(String(decoding: output, as: UTF8.self))")
        }
    }

    private static func error(_ what: String) -> CocoaError {
        CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: what])
    }
}
