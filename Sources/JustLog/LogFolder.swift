public import Foundation

/// Default places for log files.
public enum LogFolder {
    /// The default folder of the log file: on Linux `$XDG_CACHE_HOME/<program>` (or `~/.cache/<program>`),
    /// on Apple platforms `<Caches>/<bundle identifier or program>`.
    public static func defaultFolder(programName: String = ProcessInfo.processInfo.processName) -> URL {
        #if canImport(Darwin)
        let caches =
            FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSTemporaryDirectory())
        return caches.appendingPathComponent(Bundle.main.bundleIdentifier ?? programName, isDirectory: true)
        #else
        let environment = ProcessInfo.processInfo.environment
        let cache: URL
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            cache = URL(fileURLWithPath: xdg, isDirectory: true)
        } else {
            let home =
                environment["HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? FileManager.default.homeDirectoryForCurrentUser
            cache = home.appendingPathComponent(".cache", isDirectory: true)
        }
        return cache.appendingPathComponent(programName, isDirectory: true)
        #endif
    }

    /// The default log file name: `<program>.log`.
    public static func defaultFilename(programName: String = ProcessInfo.processInfo.processName) -> String {
        "\(programName).log"
    }
}
