import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a run adds to each of its records beside the event — `defaultUserInfo`, the app's and the system's versions,
/// the device — saved in the journal's folder by the run's `event_id` prefix, so that the events an earlier run
/// journaled and did not write are written at the next start as that run would have written them. Before, they took
/// the next run's: after an upgrade and a crash, the last events before the crash named the new version and the new
/// session (review, helper-52).
///
/// One file a prefix, `context.<prefix in hex>.json`, written (atomically, owner-only) whenever a pipeline is set up on
/// the journal — so a run that changed its defaults several times leaves its last. The newest ``keptFiles`` are
/// kept. A file that can't be written or read costs only that: those events get the current run's context.
enum JournalContexts {
    /// How many runs' contexts a journal folder keeps.
    static let keptFiles = 16
    static let namePrefix = "context."

    /// Saves `builder`'s context in `directory`, the journal's folder.
    static func save(_ builder: RecordBuilder, in directory: String) {
        let context = LogValue.object([
            "defaultUserInfo": .object(builder.defaultUserInfo),
            "appVersion": .string(builder.runtime.appVersion),
            "osVersion": .string(builder.runtime.osVersion),
            "device": .string(builder.runtime.device),
        ])
        let path = directory + "/" + name(of: builder.eventIDs.prefix)
        let bytes = JSONWriter.encode(context)
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        let written = bytes.withUnsafeBytes { writePrefix(fd, $0) }
        closeDescriptor(fd)
        guard written.error == nil, rename(temporary, path) == 0 else {
            unlink(temporary)
            return
        }
        removeAllButTheNewest(in: directory)
    }

    /// The record builders of the earlier runs whose context `directory` holds, by `event_id` prefix (`current`'s
    /// left out), each with `limits`.
    static func builders(in directory: String, except current: UInt64, limits: CaptureLimits) -> [UInt64: RecordBuilder]
    {
        var builders: [UInt64: RecordBuilder] = [:]
        for (name, prefix) in files(in: directory) where prefix != current {
            guard let data = FileManager.default.contents(atPath: directory + "/" + name),
                case .object(let fields)? = try? JSONReader.parse(bytes: Array(data)),
                case .object(let defaults)? = fields["defaultUserInfo"],
                case .string(let appVersion)? = fields["appVersion"],
                case .string(let osVersion)? = fields["osVersion"],
                case .string(let device)? = fields["device"]
            else { continue }
            builders[prefix] = RecordBuilder(
                defaultUserInfo: defaults,
                runtime: RuntimeInfo(appVersion: appVersion, osVersion: osVersion, device: device),
                eventIDs: EventIDGenerator(prefix: prefix),
                limits: limits
            )
        }
        return builders
    }

    private static func name(of prefix: UInt64) -> String { namePrefix + String(prefix, radix: 16) + ".json" }

    /// The context files in `directory`, with their prefixes.
    private static func files(in directory: String) -> [(name: String, prefix: UInt64)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name in
            guard name.hasPrefix(namePrefix), name.hasSuffix(".json") else { return nil }
            let hex = name.dropFirst(namePrefix.count).dropLast(".json".count)
            return UInt64(hex, radix: 16).map { (name, $0) }
        }
    }

    /// Deletes the context files past the newest ``keptFiles`` (by modification time).
    private static func removeAllButTheNewest(in directory: String) {
        let found = files(in: directory)
        guard found.count > keptFiles else { return }
        let dated = found.map { file -> (name: String, modified: Int) in
            var info = stat()
            guard stat(directory + "/" + file.name, &info) == 0 else { return (file.name, 0) }
            #if canImport(Darwin)
            return (file.name, Int(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int(info.st_mtimespec.tv_nsec))
            #else
            return (file.name, Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec))
            #endif
        }
        for file in dated.sorted(by: { $0.modified > $1.modified }).dropFirst(keptFiles) {
            unlink(directory + "/" + file.name)
        }
    }
}
