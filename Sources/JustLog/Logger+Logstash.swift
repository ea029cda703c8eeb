public import Foundation
public import JustLogCore
public import JustLogLogstash

extension Logger.Configuration {
    /// The Logstash destination's settings (SPEC §1, §4).
    public struct Logstash: Sendable {
        /// The collector's host name or address.
        public var host: String
        /// The collector's port.
        public var port: UInt16
        /// Seconds between batched dispatches (the documented `logstashTimeout`). Default 5.
        public var sendInterval: TimeInterval
        /// TLS (the default) or plain TCP.
        public var useTLS: Bool
        /// TLS *without* certificate verification, with a warning. Default `false`.
        public var allowUntrustedServer: Bool
        /// A PEM bundle of CA certificates to trust instead of the system roots.
        public var caFile: String?
        /// Base64 SHA-256 digests of the collector's SubjectPublicKeyInfo; when set, one must match (with
        /// `allowUntrustedServer` too: then the pins are the only check).
        public var pinnedPublicKeys: [String]
        /// A logz.io token, sent as `"token"` in every event.
        public var token: String?
        /// Print connection activity to the console (never the token).
        public var logActivity: Bool
        /// Where activity lines go. Default: standard output.
        public var activityOutput: TextOutput
        /// The spool folder, created (owner-only, with its missing parents) if needed. Default:
        /// `<log folder>/<log file name>.spool/` — next to the file destination's file, or to the default log
        /// file when there is no file destination. One logger per folder: a second logger on the same folder
        /// can't use it (two would overwrite each other), says so, holds its Logstash events in memory and
        /// fails `forceSend` until the folder is free.
        public var spoolFolder: URL?
        /// The spool's size cap; past it the oldest events are dropped and counted. Default 64 MiB.
        public var spoolCapacity: Int
        /// The lowest level sent. Default: every level.
        public var minimumLevel: LogLevel
        /// The protocol spoken to the collector: `.jsonLines` (the default: Logstash's `tcp` input with the
        /// `json_lines` codec, syslog-ng, rsyslog) or `.beats` (Logstash's `beats` input: the collector
        /// acknowledges what it queued, and only that is forgotten — recommended for Logstash).
        public var transport: LogstashClient.Transport = .jsonLines

        public init(
            host: String,
            port: UInt16,
            sendInterval: TimeInterval = 5,
            useTLS: Bool = true,
            allowUntrustedServer: Bool = false,
            caFile: String? = nil,
            pinnedPublicKeys: [String] = [],
            token: String? = nil,
            logActivity: Bool = false,
            spoolFolder: URL? = nil,
            spoolCapacity: Int = 64 << 20,
            minimumLevel: LogLevel = .verbose
        ) {
            self.host = host
            self.port = port
            self.sendInterval = sendInterval
            self.useTLS = useTLS
            self.allowUntrustedServer = allowUntrustedServer
            self.caFile = caFile
            self.pinnedPublicKeys = pinnedPublicKeys
            self.token = token
            self.logActivity = logActivity
            self.activityOutput = .standardOutput
            self.spoolFolder = spoolFolder
            self.spoolCapacity = spoolCapacity
            self.minimumLevel = minimumLevel
        }
    }
}

extension Logger {
    /// The Logstash destination of `logstash`. Settings that can't work (a spool cap below the resend window,
    /// an unreadable CA file) are reported, and the route then holds an ``UnavailableLogstashDestination``, so
    /// that `forceSend` fails with the reason rather than succeed with nothing sent. A spool folder that
    /// can't be used is no such case: the destination handles it (see ``LogstashDestination``).
    /// (Optional only for its caller's sake: it always returns a route.)
    /// The spool's folder. Default: next to the log file (`<log folder>/<log file name>.spool/`), so a restarted
    /// program finds it.
    static func logstashSpoolFolder(_ logstash: Configuration.Logstash, configuration: Configuration) -> URL {
        let logFile =
            configuration.file?.destination.url
            ?? LogFolder.defaultFolder().appendingPathComponent(LogFolder.defaultFilename())
        return logstash.spoolFolder
            ?? logFile.deletingLastPathComponent().appendingPathComponent(
                logFile.lastPathComponent + ".spool",
                isDirectory: true
            )
    }

    static func makeLogstashRoute(
        _ logstash: Configuration.Logstash,
        configuration: Configuration,
        isOn: DestinationSwitch,
        journaled: Bool
    ) -> LogPipeline.Route? {
        var client = LogstashClient.Configuration(host: logstash.host, port: Int(logstash.port))
        client.useTLS = logstash.useTLS
        client.allowUntrustedServer = logstash.allowUntrustedServer
        client.caFile = logstash.caFile
        client.pinnedSPKISHA256 = logstash.pinnedPublicKeys
        client.transport = logstash.transport
        // Between 50 ms and a day; NaN or infinity must not trap converting to an integer.
        let interval = logstash.sendInterval.isNaN ? 5 : min(max(0.05, logstash.sendInterval), 86_400)
        client.sendInterval = .milliseconds(Int64(interval * 1000))
        let folder = logstashSpoolFolder(logstash, configuration: configuration)
        var destination = LogstashDestination.Configuration(
            client: client,
            spoolDirectory: folder.path,
            token: logstash.token
        )
        destination.spool.maxTotalBytes = logstash.spoolCapacity
        destination.reportUserInfo = configuration.defaultUserInfo
        var activity: (@Sendable (String) -> Void)?
        if logstash.logActivity {
            let console = logstash.activityOutput
            activity = { line in console.write(Array("JustLog Logstash: \(line)\n".utf8)) }
        }
        do {
            let logstashDestination = try LogstashDestination(
                configuration: destination,
                activity: activity,
                diagnostics: configuration.diagnostics
            )
            return LogPipeline.Route(
                SwitchedDestination(logstashDestination, isOn: isOn, journaled: journaled),
                minimumLevel: logstash.minimumLevel
            )
        } catch {
            configuration.diagnostics.report("no Logstash logging: \(error)")
            return LogPipeline.Route(UnavailableLogstashDestination(reason: error), minimumLevel: logstash.minimumLevel)
        }
    }
}

/// Stands in for a Logstash destination whose settings can't work: events for it are counted and dropped,
/// and every flush (`forceSend`) fails with the reason, so that the problem is not only a line at setup.
final class UnavailableLogstashDestination: LogDestination {
    private let reason: String
    private let dropped = LockedValue<UInt64>(0)

    init(reason: any Error) {
        self.reason = "\(reason)"
    }

    func write(_ batch: LogBatch) {
        dropped.withLock { $0 += UInt64(batch.records.count) }
    }

    /// An earlier run's events are not written here — it drops what it is given — so they are not "recovered" for
    /// it: with no other destination to write them, the restart counts them lost and says so (review, helper-67).
    func journalRecovery() -> JournalRecovery { .countOnly }

    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        completion(
            JustLogError(
                .invalidConfiguration,
                "no Logstash logging: \(reason); \(dropped.current) event(s) for Logstash were dropped"
            )
        )
    }
}
