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
/// One file a pipeline set-up (each draws its own prefix), `context.<number>.<prefix in hex>.json`, written
/// (atomically, owner-only) when a pipeline is set up on the journal — again, under its prefix, when it is
/// reconfigured: a set-up that changed its defaults leaves its last. The numbers rank the files (not their times: a
/// clock set back would rank the newest last, review helper-55); the newest ``keptFiles`` are kept, the current one
/// always, and a set-up's and those before it are deleted when it shuts down with nothing left unwritten in the
/// journal. A file that can't be written or read costs only that: those events get the current run's context, as
/// before.
enum JournalContexts {
    /// How many set-ups' contexts a journal folder keeps.
    static let keptFiles = 16
    static let namePrefix = "context."
    /// The largest context file read (a `defaultUserInfo` is a handful of keys).
    static let maximumFileBytes = 1 << 20

    /// Saves `builder`'s context in `directory`, the journal's folder, and returns the record builders of the earlier
    /// set-ups whose context the folder holds, by `event_id` prefix, each with `builder`'s limits — one listing of the
    /// folder for both.
    static func exchange(_ builder: RecordBuilder, in directory: String) -> [UInt64: RecordBuilder] {
        let others = save(builder, in: directory, beside: files(in: directory))
        return builders(of: others, in: directory, limits: builder.limits)
    }

    /// Saves `builder`'s context in `directory`, which holds the context files `found`; returns the other set-ups'
    /// files it keeps.
    private static func save(
        _ builder: RecordBuilder,
        in directory: String,
        beside found: [ContextFile]
    ) -> [ContextFile] {
        let context = LogValue.object([
            "format": .int(1),
            "defaultUserInfo": .object(builder.defaultUserInfo),
            "appVersion": .string(builder.runtime.appVersion),
            "osVersion": .string(builder.runtime.osVersion),
            "device": .string(builder.runtime.device),
        ])
        let prefix = builder.eventIDs.prefix
        let others = found.filter { $0.prefix != prefix }.sorted { $0.number > $1.number }
        let number = (found.map(\.number).max() ?? 0) + 1
        let path = directory + "/" + namePrefix + "\(number)." + String(prefix, radix: 16) + ".json"
        let bytes = JSONWriter.encode(context)
        let temporary = directory + "/" + namePrefix + "tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return others }
        let written = bytes.withUnsafeBytes { writePrefix(fd, $0) }
        closeDescriptor(fd)
        guard written.error == nil, rename(temporary, path) == 0 else {
            unlink(temporary)
            return others
        }
        // This set-up's earlier file (a reconfiguration), and the others' past the newest kept.
        for file in found.filter({ $0.prefix == prefix }) + others.dropFirst(keptFiles - 1) {
            unlink(directory + "/" + file.name)
        }
        return Array(others.prefix(keptFiles - 1))
    }

    /// Deletes the context file of the set-up whose prefix is `prefix` and every one saved before it — not those of
    /// later set-ups (a reconfiguration saves the new one before the old shuts down): the journal holds nothing they
    /// left unwritten.
    static func removeAll(in directory: String, upToThatOf prefix: UInt64) {
        let found = files(in: directory)
        guard let own = found.filter({ $0.prefix == prefix }).max(by: { $0.number < $1.number }) else { return }
        for file in found where file.number <= own.number { unlink(directory + "/" + file.name) }
    }

    /// The record builders of the earlier set-ups whose context `directory` holds, by `event_id` prefix (`current`'s
    /// left out), each with `limits`.
    static func builders(in directory: String, except current: UInt64, limits: CaptureLimits) -> [UInt64: RecordBuilder]
    {
        builders(of: files(in: directory).filter { $0.prefix != current }, in: directory, limits: limits)
    }

    /// The record builders of the context files `files` in `directory`, by prefix (the newest file of a prefix
    /// wins), each with `limits`.
    private static func builders(
        of files: [ContextFile],
        in directory: String,
        limits: CaptureLimits
    ) -> [UInt64: RecordBuilder] {
        var builders: [UInt64: RecordBuilder] = [:]
        for file in files.sorted(by: { $0.number < $1.number }) {
            guard let bytes = read(directory + "/" + file.name),
                case .object(let fields)? = try? JSONReader.parse(bytes: bytes),
                case .object(let defaults)? = fields["defaultUserInfo"],
                case .string(let appVersion)? = fields["appVersion"],
                case .string(let osVersion)? = fields["osVersion"],
                case .string(let device)? = fields["device"]
            else { continue }
            builders[file.prefix] = RecordBuilder(
                defaultUserInfo: defaults,
                runtime: RuntimeInfo(appVersion: appVersion, osVersion: osVersion, device: device),
                eventIDs: EventIDGenerator(prefix: file.prefix),
                limits: limits
            )
        }
        return builders
    }

    /// The bytes of the regular file at `path` (no link followed, no wait), if it holds at most
    /// ``maximumFileBytes``.
    private static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { closeDescriptor(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maximumFileBytes else {
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        return count == bytes.count ? bytes : nil
    }

    /// A context file: its name, and the number and prefix in it.
    private typealias ContextFile = (name: String, number: Int, prefix: UInt64)

    /// The context files in `directory`.
    private static func files(in directory: String) -> [ContextFile] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name in
            guard name.hasPrefix(namePrefix), name.hasSuffix(".json") else { return nil }
            let parts = name.dropFirst(namePrefix.count).dropLast(".json".count).split(separator: ".")
            // (A number past any a folder reaches is not one of ours: one more would overflow.)
            guard parts.count == 2, let number = Int(parts[0]), (1..<(Int.max / 2)).contains(number),
                let prefix = UInt64(parts[1], radix: 16)
            else { return nil }
            return (name, number, prefix)
        }
    }
}
