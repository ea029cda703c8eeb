import Foundation

/// Runs `/usr/bin/chattr flag path` (e2fsprogs: `+i` immutable, `+c` compressed, …), its error output discarded;
/// whether it succeeded (`false` where there is no `chattr`).
///
/// ```swift
/// try #require(chattr("+i", file))
/// defer { _ = chattr("-i", file) }
/// ```
@discardableResult
public func chattr(_ flag: String, _ path: String) -> Bool {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
    process.arguments = [flag, path]
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}
