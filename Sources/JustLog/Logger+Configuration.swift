public import Foundation
public import JustLogCore

extension Logger {
    /// Everything a ``Logger`` needs, as one immutable value: which destinations, each with its minimum level,
    /// and what goes into every record.
    ///
    /// ```swift
    /// let configuration = Logger.Configuration(
    ///     console: .init(minimumLevel: .warning),
    ///     file: .init(url: URL(fileURLWithPath: "/var/log/app/app.log"), minimumLevel: .debug),
    ///     defaultUserInfo: ["app": "billing"]
    /// )
    /// let logger = Logger(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The console destination, or `nil` for none. Default: on, every level.
        public var console: Console?
        /// The file destination, or `nil` for none. Default: none.
        public var file: File?
        /// The Logstash destination, or `nil` for none. Default: none.
        public var logstash: Logstash?
        /// Any other destinations.
        public var extraDestinations: [LogPipeline.Route]
        /// Added to every record's `userInfo`; a call's own key replaces a default key.
        public var defaultUserInfo: [String: LogValue]
        /// `app_version`, `version` and `device` of the metadata.
        public var runtime: RuntimeInfo
        /// Applied to every record before any destination sees it.
        public var sanitizer: Sanitizer?
        /// Queue limits and exit flushing.
        public var pipeline: LogPipeline.Configuration
        /// Where JustLog reports its own problems. Default: standard error.
        public var diagnostics: DiagnosticSink
        /// What `Sensitive` values and swift-log values marked sensitive become. Default `PrivacyPolicy/default`.
        public var privacy: PrivacyPolicy
        /// What one call may carry. Default `CaptureLimits()`.
        public var captureLimits: CaptureLimits
        /// The clock of log calls. Default: the system clock.
        public var clock: @Sendable () -> LogTimestamp
        /// The journal that makes every event crash-safe before its log call returns, or `nil` for none. Default:
        /// on whenever there is a file or Logstash destination, in `<log folder>/<log file name>.journal/` (see
        /// ``Journal/folder``). With it, the Logstash destination encodes in the background.
        public var journal: Journal?

        public init(
            console: Console? = Console(),
            file: File? = nil,
            logstash: Logstash? = nil,
            extraDestinations: [LogPipeline.Route] = [],
            defaultUserInfo: [String: LogValue] = [:],
            runtime: RuntimeInfo = .current,
            sanitizer: Sanitizer? = nil,
            pipeline: LogPipeline.Configuration = .init(),
            diagnostics: DiagnosticSink = .standardError,
            privacy: PrivacyPolicy = .default,
            captureLimits: CaptureLimits = CaptureLimits(),
            clock: @escaping @Sendable () -> LogTimestamp = { LogTimestamp.now() },
            journal: Journal? = Journal()
        ) {
            self.journal = journal
            self.console = console
            self.file = file
            self.logstash = logstash
            self.extraDestinations = extraDestinations
            self.defaultUserInfo = defaultUserInfo
            self.runtime = runtime
            self.sanitizer = sanitizer
            self.pipeline = pipeline
            self.diagnostics = diagnostics
            self.privacy = privacy
            self.captureLimits = captureLimits
            self.clock = clock
        }

        /// The console destination's settings.
        public struct Console: Sendable {
            public var destination: ConsoleDestination.Configuration
            public var minimumLevel: LogLevel

            public init(_ destination: ConsoleDestination.Configuration = .init(), minimumLevel: LogLevel = .verbose) {
                self.destination = destination
                self.minimumLevel = minimumLevel
            }
        }

        /// Where the journal lives and how big it may grow (see `EventJournal`).
        public struct Journal: Sendable {
            /// The journal's folder. Default `nil`: `<log folder>/<log file name>.journal/`, next to the log
            /// file; with only Logstash on, next to its spool (`<name>.spool/` → `<name>.journal/`); with only the
            /// console, no journal unless a folder is given.
            public var folder: URL?
            /// The most disk space it may take; past it the oldest events are dropped and counted. Default 64 MiB.
            public var capacity: Int

            public init(folder: URL? = nil, capacity: Int = 64 << 20) {
                self.folder = folder
                self.capacity = capacity
            }
        }

        /// The file destination's settings.
        public struct File: Sendable {
            public var destination: FileDestination.Configuration
            public var minimumLevel: LogLevel

            public init(_ destination: FileDestination.Configuration, minimumLevel: LogLevel = .verbose) {
                self.destination = destination
                self.minimumLevel = minimumLevel
            }

            public init(url: URL, minimumLevel: LogLevel = .verbose) {
                self.init(FileDestination.Configuration(url: url), minimumLevel: minimumLevel)
            }
        }
    }

    /// Builds the destinations of `configuration`. A destination that cannot be created is reported, not thrown.
    static func setup(_ configuration: Configuration, switches: DestinationSwitches) -> LogPipeline.Setup {
        let journal = openJournal(configuration)
        let journaled = journal != nil
        var routes: [LogPipeline.Route] = []
        if let console = configuration.console {
            routes.append(
                .init(
                    SwitchedDestination(
                        ConsoleDestination(configuration: console.destination),
                        isOn: switches.console,
                        journaled: journaled
                    ),
                    minimumLevel: console.minimumLevel
                )
            )
        }
        if let file = configuration.file {
            do {
                let destination = try FileDestination(
                    configuration: file.destination,
                    diagnostics: configuration.diagnostics
                )
                routes.append(
                    .init(
                        SwitchedDestination(destination, isOn: switches.file, journaled: journaled),
                        minimumLevel: file.minimumLevel
                    )
                )
            } catch {
                configuration.diagnostics.report("no file logging: \(error)")
            }
        }
        if let logstash = configuration.logstash {
            if let route = makeLogstashRoute(
                logstash,
                configuration: configuration,
                isOn: switches.logstash,
                journaled: journaled
            ) {
                routes.append(route)
            }
        }
        routes += configuration.extraDestinations
        return StructuredLogger.Configuration(
            destinations: routes,
            defaultUserInfo: configuration.defaultUserInfo,
            runtime: configuration.runtime,
            sanitizer: configuration.sanitizer,
            pipeline: configuration.pipeline,
            diagnostics: configuration.diagnostics,
            captureLimits: configuration.captureLimits,
            privacy: configuration.privacy,
            journal: journal
        ).setup
    }

    /// Opens the journal of `configuration`, if it has one; one that can't be opened (its folder is in use by
    /// another process, or can't be written) is reported, and the logger runs without it.
    static func openJournal(_ configuration: Configuration) -> EventJournal? {
        guard let journal = configuration.journal,
            let folder = journal.folder ?? defaultJournalFolder(configuration)
        else { return nil }
        do {
            let opened = try EventJournal(
                configuration: .init(directory: folder.path, maxTotalBytes: journal.capacity),
                diagnostics: configuration.diagnostics
            )
            // Beside the log file, the journals of log files no logger writes now: deleted, or said (see
            // `StrayJournals`). Not beside a journal folder of the user's choosing.
            if journal.folder == nil {
                StrayJournals.tidy(besides: folder.path, diagnostics: configuration.diagnostics)
            }
            return opened
        } catch {
            configuration.diagnostics.report(
                "no log journal (the console and file destinations lose what is queued if the program is killed): \(error)"
            )
            return nil
        }
    }
}

extension Logger {
    /// Next to the log file, `<log folder>/<log file name>.journal/`; with only Logstash on, beside its spool
    /// (`<name>.spool/` → `<name>.journal/`); `nil` without a file or Logstash destination (the console alone
    /// needs none).
    static func defaultJournalFolder(_ configuration: Configuration) -> URL? {
        if let file = configuration.file {
            let url = file.destination.url
            return url.deletingLastPathComponent()
                .appendingPathComponent(url.lastPathComponent + ".journal", isDirectory: true)
        }
        guard let logstash = configuration.logstash else { return nil }
        let spool = logstashSpoolFolder(logstash, configuration: configuration)
        var name = spool.lastPathComponent
        if name.hasSuffix(".spool") { name.removeLast(".spool".count) }
        return spool.deletingLastPathComponent().appendingPathComponent(name + ".journal", isDirectory: true)
    }
}

// MARK: - Property-style settings

extension Logger {
    /// What the documented properties set, turned into a ``Configuration`` by ``setup()``.
    struct Settings: Sendable {
        var logFilename: String?
        var baseUrlForFileLogging = LogFolder.defaultFolder()
        /// Rotation settings (the URL is set from the two above at setup()).
        var file = FileDestination.Configuration(url: URL(fileURLWithPath: "/"))
        var consoleMinimumLevel = LogLevel.verbose
        var fileMinimumLevel = LogLevel.verbose
        var logstash = Configuration.Logstash(host: "", port: 5000)
        var defaultUserInfo: [String: LogValue] = [:]
        var sanitizer: Sanitizer?
        var privacy = PrivacyPolicy.default
        var captureLimits = CaptureLimits()
        var extraDestinations: [LogPipeline.Route] = []
        var pipeline = LogPipeline.Configuration()
        var diagnostics = DiagnosticSink.standardError

        func configuration(switches: DestinationSwitches) -> Configuration {
            let fileURL = baseUrlForFileLogging.appendingPathComponent(
                logFilename ?? LogFolder.defaultFilename(),
                isDirectory: false
            )
            var file = self.file
            file.url = fileURL
            var logstash = self.logstash
            logstash.spoolFolder =
                logstash.spoolFolder
                ?? fileURL.deletingLastPathComponent()
                .appendingPathComponent(fileURL.lastPathComponent + ".spool", isDirectory: true)
            return Configuration(
                console: switches.console.isOn ? .init(minimumLevel: consoleMinimumLevel) : nil,
                file: switches.file.isOn ? .init(file, minimumLevel: fileMinimumLevel) : nil,
                logstash: switches.logstash.isOn && !logstash.host.isEmpty ? logstash : nil,
                extraDestinations: extraDestinations,
                defaultUserInfo: defaultUserInfo,
                sanitizer: sanitizer,
                pipeline: pipeline,
                diagnostics: diagnostics,
                privacy: privacy,
                captureLimits: captureLimits
            )
        }
    }
}

/// The on/off switches of the documented `enable…Logging` properties, shared by every setup of one logger.
final class DestinationSwitches: Sendable {
    let console = DestinationSwitch()
    let file = DestinationSwitch()
    let logstash = DestinationSwitch()

    /// Notes which destinations `configuration`, now running, has.
    func built(_ configuration: Logger.Configuration) {
        console.builtAtSetup.withLock { $0 = configuration.console != nil }
        file.builtAtSetup.withLock { $0 = configuration.file != nil }
        logstash.builtAtSetup.withLock { $0 = configuration.logstash != nil }
    }
}

/// One destination's on/off switch. A change applies to events logged after it, not to events already
/// queued: the caller's view (`requested`) changes at once, the worker's (`applied`) in log order.
final class DestinationSwitch: Sendable {
    private let requested = LockedValue(true)
    private let applied = LockedValue(true)
    /// Whether the last ``Logger/setup()`` built the destination (`nil` before the first).
    let builtAtSetup = LockedValue<Bool?>(nil)

    var isOn: Bool { requested.current }

    /// Sets the switch; `pipeline` (if running) applies it after the events already queued.
    func set(_ isOn: Bool, pipeline: LogPipeline?) {
        requested.withLock { $0 = isOn }
        if let pipeline {
            pipeline.performInOrder { [applied] in applied.withLock { $0 = isOn } }
        } else {
            applied.withLock { $0 = isOn }
        }
    }

    /// Whether a destination with `delivery` takes the record now: inline destinations see the record on the
    /// caller's thread, in order with the caller's own changes; background ones see the worker's view.
    func isOn(for delivery: DestinationDelivery) -> Bool {
        delivery == .inline ? requested.current : applied.current
    }
}

/// A destination that can be switched off and on at run time; off, it ignores what it is given.
final class SwitchedDestination: LogDestination, PlainBatchWriting, PipelineHoldingBack, MemoryHolding {
    let base: any LogDestination
    /// `base`, if it writes plain journal records straight from their bytes.
    private let plainBase: (any PlainBatchWriting)?
    /// `base`, if it may hold records only in memory (asked at every acknowledgement: cast once).
    private let memoryHoldingBase: (any MemoryHolding)?
    let isOn: DestinationSwitch
    /// Where the pipeline delivers to `base` (a ``DestinationDelivery/durable`` one is in the background when
    /// the logger has a journal).
    let delivery: DestinationDelivery

    init(_ base: any LogDestination, isOn: DestinationSwitch, journaled: Bool) {
        self.base = base
        self.plainBase = base as? any PlainBatchWriting
        self.memoryHoldingBase = base as? any MemoryHolding
        self.isOn = isOn
        self.delivery = base.delivery.resolved(journaled: journaled)
    }

    func write(_ batch: LogBatch) {
        if isOn.isOn(for: delivery) { base.write(batch) }
    }

    func write(_ batch: PlainBatch) {
        guard isOn.isOn(for: delivery) else { return }
        if let plainBase {
            plainBase.write(batch)
        } else {
            base.write(batch.logBatch)
        }
    }

    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        base.flush(completion: completion)
    }

    var shutdownFailure: (any Error)? { base.shutdownFailure }

    func shutdown() {
        base.shutdown()
    }

    func journalRecovery() -> JournalRecovery {
        base.journalRecovery()
    }

    func pipelineAttached(mayWait: @escaping @Sendable () -> Bool) {
        (base as? any PipelineHoldingBack)?.pipelineAttached(mayWait: mayWait)
    }

    var holdsRecordsOnlyInMemory: Bool { memoryHoldingBase?.holdsRecordsOnlyInMemory ?? false }
}
