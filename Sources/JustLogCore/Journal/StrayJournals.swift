#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The journals an earlier run left beside this one's for log files no logger writes now — the log file renamed, a
/// file name with the date in it, a program that stopped using a file.
///
/// A journal is written only by a logger of its own log file, so such a journal stayed: its segments (4 MiB each)
/// on disk for good, and the events a crash left in it never written and never said (review, helper-66). Looked at
/// when a logger opens its own journal in the log folder: one that holds nothing unwritten is deleted; one that
/// holds events is said on the diagnostics sink — written when a logger next writes that file, and kept until then
/// (or deleted by hand). One another process (or logger) holds, or that changed in the last minute, is in use or
/// about to be, and left alone.
package enum StrayJournals {
    /// How a journal's folder is named beside its log file: `<log file name>.journal`.
    package static let folderSuffix = ".journal"

    /// Looks at the journals in `journal`'s folder's parent other than `journal` itself.
    package static func tidy(besides journal: String, diagnostics: DiagnosticSink) {
        let own = journal.hasSuffix("/") ? String(journal.dropLast()) : journal
        guard let slash = own.lastIndex(of: "/") else { return }
        let parent = String(own[..<slash])
        for name in directoryEntries(parent.isEmpty ? "/" : parent) ?? [] where name.hasSuffix(folderSuffix) {
            let folder = parent + "/" + name
            guard folder != own, let segments = segmentNames(in: folder),
                !usedRecently(folder, segments: segments)
            else { continue }
            var configuration = EventJournal.Configuration(directory: folder)
            configuration.lockWait = .zero
            // Another process's, or damaged past opening (said by the open itself): left alone.
            guard let stray = try? EventJournal(configuration: configuration, diagnostics: diagnostics) else {
                continue
            }
            let held = stray.recoveryCount
            if !stray.closeRemovingFolderIfEverythingIsWritten() {
                let file = String(name.dropLast(folderSuffix.count))
                diagnostics.report(
                    "the log journal \(folder) holds \(held) event(s) that an earlier run logged for the log file \(file) and did not write there, and no logger holds it now (its log file renamed?): they are written when a logger next writes that file in \(parent) — or delete the folder to drop them"
                )
            }
        }
    }

    /// How long after its last change a journal is left alone: one that changed since is in use, or about to be — a
    /// logger reconfiguring closes its journal and opens it again, and several processes starting together each open
    /// their own (review, helper-73). The journals this is for were left by a run that ended.
    static let recentUse: Duration = .seconds(60)

    /// Whether `folder`, its cursor or one of its `segments` changed within ``recentUse``.
    private static func usedRecently(_ folder: String, segments: [String]) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let recent = Int(now.tv_sec) - Int(recentUse.components.seconds)
        let paths = [folder, folder + "/cursor"] + segments.map { folder + "/" + $0 }
        return paths.contains { path in
            var info = stat()
            guard lstat(path, &info) == 0 else { return false }
            #if canImport(Darwin)
            return Int(info.st_mtimespec.tv_sec) >= recent
            #else
            return Int(info.st_mtim.tv_sec) >= recent
            #endif
        }
    }

    /// The segment files of `folder` if it is a folder (not a link) holding a spool's lock and at least one segment:
    /// a journal worth opening; `nil` otherwise — anything else named `*.journal` is not JustLog's, or holds nothing.
    private static func segmentNames(in folder: String) -> [String]? {
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, let names = directoryEntries(folder),
            names.contains("spool.lock")
        else { return nil }
        let segments = names.filter { SpoolSegment.sequence(inFileName: $0) != nil }
        return segments.isEmpty ? nil : segments
    }
}
