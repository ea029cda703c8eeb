public import Foundation

/// Default places for log files.
public enum LogFolder {
    /// The default folder of the log file: on Linux `$XDG_CACHE_HOME/<program>` (or `~/.cache/<program>`),
    /// on Apple platforms `<Caches>/<bundle identifier or program>`.
    public static func defaultFolder(programName: String = ProcessInfo.processInfo.processName) -> URL {
        defaultFolder(programName: programName, environment: ProcessInfo.processInfo.environment)
    }

    /// ``defaultFolder(programName:)`` with `environment` for the process's (tests pass their own).
    package static func defaultFolder(programName: String, environment: [String: String]) -> URL {
        #if canImport(Darwin)
        let caches =
            FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSTemporaryDirectory())
        return caches.appendingPathComponent(Bundle.main.bundleIdentifier ?? programName, isDirectory: true)
        #else
        let cache: URL
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            cache = URL(fileURLWithPath: xdg, isDirectory: true)
        } else {
            // An absolute `HOME` only, as for `XDG_CACHE_HOME`: an empty or relative one put the logs and the journal
            // under whatever folder the program was started in (review, helper-69).
            // Else the user database's home (not Foundation's, which reads `HOME` again for a user the database does
            // not list — an arbitrary uid in a container: review, helper-70), else the temporary folder.
            let home =
                environment["HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0, isDirectory: true) : nil }
                ?? listedHome()
                ?? URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            cache = home.appendingPathComponent(".cache", isDirectory: true)
        }
        return cache.appendingPathComponent(programName, isDirectory: true)
        #endif
    }

    #if !canImport(Darwin)
    /// This user's home folder as the user database lists it, if it does and it is absolute.
    private static func listedHome() -> URL? {
        guard let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir else { return nil }
        let path = String(cString: directory)
        return path.hasPrefix("/") ? URL(fileURLWithPath: path, isDirectory: true) : nil
    }
    #endif

    /// The default log file name: `<program>.log`.
    public static func defaultFilename(programName: String = ProcessInfo.processInfo.processName) -> String {
        "\(programName).log"
    }
}
