public import JustLogCore
public import NIOCore
import NIOPosix
import NIOSSL

/// Sends the records of a ``LogstashSpool`` to a Logstash-compatible collector over one persistent TCP or
/// TLS connection — as `json_lines` (carrying out the decisions of a ``ConnectionStateMachine``) or as
/// Lumberjack v2 windows that the collector acknowledges (a ``BeatsStateMachine``), per
/// ``Configuration/transport``.
///
/// With several ``Configuration/hosts`` it sends to one at a time, starting with the first, and moves to the
/// next when a connect fails, a connection is lost, or the collector stops taking what is sent (json_lines: a write
/// not taken within ``Configuration/writeTimeout``; Beats: no acknowledgement within its `ackTimeout`) — failover;
/// activity lines name the host they concern. After a failed connect the next host is tried at once (a flush or a
/// shutdown waiting for a connection waits for it), until every host has failed since the last connection: only
/// then does the client back off. A ``flush(within:completion:)`` during the backoff connects at once — the first in
/// an outage; later ones wait for the backoff's schedule until a connection proves healthy. A flush that gives up is
/// forgotten.
/// With Beats and ``Configuration/loadBalance``, it keeps one connection to each host instead, each with its
/// own window and acknowledgements, sharing out the spool's records (a ``WindowDispatcher``).
///
/// ## Who calls what
/// - The destination appends each record to the spool on the logging caller's thread, then calls
///   ``recordsAppended()`` (cheap: a lock and a counter; it wakes the sender only once a full batch waits).
/// - ``start()`` once; ``flush(completion:)`` / ``flush()`` for `forceSend`; ``shutdown()`` once at the end.
/// - Everything else runs on one event loop of the injected group. Activity lines, warnings and the
///   drop report callback are called on that loop: don't block in them.
///
/// ```swift
/// let spool = try LogstashSpool(configuration: .init(directory: "/var/log/app/app.log.spool"))
/// let client = try LogstashClient(
///     configuration: .init(host: "logstash.example.com", port: 5052),
///     spool: spool,
///     activity: { print($0) }
/// )
/// client.start()
/// try spool.append(Array(#"{"message":"hello","event_id":"1"}"#.utf8))
/// client.recordsAppended()
/// try await client.flush()
/// await client.shutdown()
/// ```
public final class LogstashClient: @unchecked Sendable {
    // MARK: - Settings and collaborators (immutable)

    /// The configuration the client was made with.
    public let configuration: Configuration
    /// The spool the client drains.
    public let spool: LogstashSpool
    private let eventLoop: any EventLoop
    /// The TLS settings of each host (its name is checked against its certificate), or `nil` for plain TCP.
    private let tlsByHost: [LogstashTLS?]
    private let activity: (@Sendable (String) -> Void)?
    private let warning: @Sendable (String) -> Void
    private let onDeliveryResumed: (@Sendable (UInt64) -> Void)?
    /// Where records are read and acknowledged: the spool, or this connection's lane when load balancing.
    private let source: any SpoolSource
    /// With load balancing: one client per host, sharing the spool (this client then only forwards).
    private let lanes: [LogstashClient]
    /// With load balancing: what hands the lanes their windows.
    private let dispatcher: WindowDispatcher?

    // MARK: - Appender side (any thread, guarded by `appendLock`)

    private let appendLock = SpoolLock()
    /// Writes to the collector that completed (see ``completedWrites``).
    private let writesCompleted = LockedValue<UInt64>(0)
    private var appendedSinceWake = 0
    private var wakeScheduled = false

    // MARK: - Sender side (event loop only)

    private var machine: any DeliveryMachine
    /// The index in ``Configuration/hosts`` of the collector connected to, or tried next.
    private var currentHost = 0
    /// Connects failed in a row since the last connection or backoff, each on the next host: until every host
    /// failed once, a failed connect tries the next one at once (see ``connectFailed(_:)``).
    private var hostsFailedInARow = 0
    /// Told on this loop what was written since it was last told (see ``observeDelivery(_:)``), and what it was
    /// told: the machine's counters then, and whether records were acknowledged since.
    private var deliveryObserver: (@Sendable (_ sent: UInt64, _ resent: UInt64) -> Void)?
    private var observedCounters = DeliveryCounters()
    private var acknowledgedUnobserved = false
    /// Set while the machine answers a failed connect: a `.connect` it asks for then (another host, at once) fails
    /// over first; otherwise the failover follows its answer (and the backoff it began).
    private var failOverBeforeConnecting = false
    /// The Beats settings, or `nil` for json_lines.
    private let beats: Transport.Beats?
    private var channel: (any Channel)?
    private var generation = 0
    private var timer: Scheduled<Void>?
    private var handshakeTimeout: Scheduled<Void>?
    /// Flushes not completed yet: whom to tell, and the timer that gives up on them (if they have a timeout).
    private var flushCallbacks: [Int: (completion: @Sendable ((any Error)?) -> Void, timeout: Scheduled<Void>?)] = [:]
    private var nextFlushID = 0
    private var shutdownCallbacks: [@Sendable (LogstashError?) -> Void] = []
    private var isShutDown = false
    private var started = false
    private var connectInProgress = false
    /// When the connect in progress began, and when the attempt a waiting shutdown's deadline counts from began:
    /// this one, or — once a shutdown waits — the one it found (as the machine counts it).
    private var connectStarted = NIODeadline.now()
    private var shutdownClockStart = NIODeadline.now()
    /// The connect in progress's channels before one connected (one per address tried; closing them gives the attempt
    /// up), and the timer that gives it up at its share of a waiting shutdown (see
    /// ``shareShutdownTimeWithTheOtherHosts()``).
    private var connectingChannels: [any Channel] = []
    private var shareTimer: Scheduled<Void>?
    private var handshakeTimedOut = false
    /// The current connection's largest advertised peer window, and its state when it was closed.
    private var largestPeerWindow: UInt32 = 0
    private var closeInfo: TCPConnectionInfo?
    /// Whether ``warnIfResendWindowExceedsSpool(_:)`` has warned (once per client).
    private var warnedResendWindow = false
    /// The memory spool reads copy into, and the buffer writes go out in, kept from one batch to the next: a batch
    /// may be a megabyte (``Configuration/maxBatchBytes``), and a fresh buffer each time cost an allocation and the
    /// kernel's zeroing of its pages — at times most of this thread's time. Each is reused only if nothing else
    /// holds it when the next batch begins, which is why that batch begins on a stack of its own (see
    /// ``readAfterWrite(_:completedAtOnce:generation:)``). Only one write is in flight at a time. Kept while the
    /// connection is, released with it.
    private var readStorage: [UInt8] = []
    private var outgoing: ByteBuffer?
    /// Whether ``write(_:)`` is in `writeAndFlush` (a completion that runs then came at once).
    private var writing = false
    /// Whether a read deferred by ``readAfterWrite(_:completedAtOnce:generation:)`` is running, and whether the
    /// write in flight was made by one: such writes, completing at once one after another, make a run.
    private var continuing = false
    private var writeContinues = false
    /// When the current run of writes began (see ``readAfterWrite(_:completedAtOnce:generation:)``).
    private var runOfWritesStart: ContinuousClock.Instant?

    // MARK: - Init

    /// - Parameters:
    ///   - eventLoopGroup: where the connection runs (default `nil`: NIO's shared singleton group).
    ///   - activity: receives activity lines (connect, TLS handshake, batch sent, error, reconnect) when
    ///     socket activity is shown; `nil` to show none. Lines never contain a token or a record.
    ///   - warning: receives warnings that are always shown (the untrusted-server warning); default `nil`: standard error.
    ///   - onDeliveryResumed: called when delivery goes on — after each successful connection, and after each
    ///     completed write (a collector that took nothing for a while on an open connection takes events again) —
    ///     with the number of records the spool dropped since the last call (only when it is more than zero): emit
    ///     one report event.
    /// - Throws: ``LogstashError`` with ``LogstashError/Code/invalidTLSConfiguration`` for an unreadable
    ///   CA file or a malformed pin.
    public convenience init(
        configuration: Configuration,
        spool: LogstashSpool,
        eventLoopGroup: (any EventLoopGroup)? = nil,
        activity: (@Sendable (String) -> Void)? = nil,
        warning: (@Sendable (String) -> Void)? = nil,
        onDeliveryResumed: (@Sendable (UInt64) -> Void)? = nil
    ) throws {
        var lanes: [LogstashClient] = []
        var shared: WindowDispatcher?
        if configuration.loadBalance, configuration.transport.isBeats, configuration.hosts.count > 1 {
            let dispatcher = WindowDispatcher(spool: spool)
            shared = dispatcher
            for (index, host) in configuration.hosts.enumerated() {
                var lane = configuration
                lane.hosts = [host]
                lane.loadBalance = false
                lanes.append(
                    try LogstashClient(
                        configuration: lane,
                        spool: spool,
                        source: dispatcher.lane(index),
                        lanes: [],
                        dispatcher: nil,
                        eventLoopGroup: eventLoopGroup,
                        activity: activity,
                        warning: warning,
                        onDeliveryResumed: onDeliveryResumed
                    )
                )
            }
        }
        try self.init(
            configuration: configuration,
            spool: spool,
            source: spool,
            lanes: lanes,
            dispatcher: shared,
            eventLoopGroup: eventLoopGroup,
            activity: activity,
            warning: warning,
            onDeliveryResumed: onDeliveryResumed
        )
    }

    private init(
        configuration: Configuration,
        spool: LogstashSpool,
        source: any SpoolSource,
        lanes: [LogstashClient],
        dispatcher: WindowDispatcher?,
        eventLoopGroup: (any EventLoopGroup)?,
        activity: (@Sendable (String) -> Void)?,
        warning: (@Sendable (String) -> Void)?,
        onDeliveryResumed: (@Sendable (UInt64) -> Void)?
    ) throws {
        try configuration.validate()
        self.configuration = configuration
        self.spool = spool
        self.source = source
        self.lanes = lanes
        self.dispatcher = dispatcher
        self.eventLoop = (eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton).next()
        self.activity = activity
        self.warning = warning ?? { message in DiagnosticSink.standardError.report(message) }
        self.onDeliveryResumed = onDeliveryResumed
        self.tlsByHost = try configuration.hosts.map { host in
            configuration.useTLS
                ? try LogstashTLS(
                    host: host.host,
                    caFile: configuration.caFile,
                    pinnedSPKISHA256: configuration.pinnedSPKISHA256,
                    allowUntrustedServer: configuration.allowUntrustedServer
                )
                : nil
        }
        self.beats = configuration.transport.beatsSettings
        if let beats {
            var policies = BeatsStateMachine<ContinuousClock>.Configuration()
            policies.sendInterval = configuration.sendInterval
            policies.maxBatchBytes = configuration.maxBatchBytes
            policies.initialWindow = beats.initialWindow
            policies.maxWindow = beats.maxWindow
            policies.ackTimeout = beats.ackTimeout
            policies.backoff.minimum = configuration.backoffMinimum
            policies.backoff.maximum = configuration.backoffMaximum
            policies.shutdownTimeout = configuration.shutdownTimeout
            policies.endpoint = configuration.endpoint
            self.machine = BeatsStateMachine(configuration: policies, clock: ContinuousClock())
        } else {
            var policies = ConnectionStateMachine<ContinuousClock>.Configuration()
            policies.sendInterval = configuration.sendInterval
            policies.maxBatchBytes = configuration.maxBatchBytes
            policies.maxBatchRecords = configuration.maxBatchRecords
            policies.resendWindowBytes = configuration.resendWindowBytes
            policies.backoffMinimum = configuration.backoffMinimum
            policies.backoffMaximum = configuration.backoffMaximum
            policies.shutdownTimeout = configuration.shutdownTimeout
            policies.writeTimeout = configuration.writeTimeout
            policies.endpoint = configuration.endpoint
            self.machine = ConnectionStateMachine(configuration: policies, clock: ContinuousClock())
        }
    }

    // MARK: - Public API

    /// Starts connecting and sending. Later calls do nothing.
    public func start() {
        eventLoop.execute {
            guard !self.started else { return }
            self.started = true
            // Once per client, naming every host: not once per load-balanced lane.
            if self.configuration.useTLS && self.configuration.allowUntrustedServer {
                let hosts = self.configuration.hosts.map { "\($0.host):\($0.port)" }.joined(separator: ", ")
                self.warning(
                    self.configuration.pinnedSPKISHA256.isEmpty
                        ? "JustLog WARNING: allowUntrustedServer is on: the TLS certificate of \(hosts) is NOT verified; anyone on the path can read and change the logs"
                        : "JustLog WARNING: allowUntrustedServer is on: the TLS certificate of \(hosts) is checked only against the pinned public keys (no chain, name or expiry checks)"
                )
            }
            if self.lanes.isEmpty {
                self.run(self.machine.start(at: self.source.cursor))
            } else {
                for lane in self.lanes { lane.startLane() }
            }
        }
    }

    /// Starts a load-balanced lane (its client's ``start()`` warned for it): marked started, so that its shutdown
    /// drains and closes; not after that shutdown.
    private func startLane() {
        eventLoop.execute {
            guard !self.started, !self.isShutDown else { return }
            self.started = true
            self.run(self.machine.start(at: self.source.cursor))
        }
    }

    /// Calls `observer` on the event loop whenever the delivery counters changed (records written, resent or
    /// acknowledged, a connect made or failed) or records were acknowledged — before any flush or shutdown waiting
    /// on them is told: with how many were written since its last call (`sent`), and how many of them again after a
    /// connection error (`resent`), so the destination's metrics need no poller. Set it before ``start()`` and
    /// before records are appended; with load balancing, every lane calls it.
    package func observeDelivery(_ observer: @escaping @Sendable (_ sent: UInt64, _ resent: UInt64) -> Void) {
        deliveryObserver = observer
        for lane in lanes { lane.observeDelivery(observer) }
    }

    /// Tells the sender that a record was appended to the spool. Cheap: it wakes the sender only when a
    /// full batch is waiting; otherwise the records go at the next ``Configuration/sendInterval``.
    public func recordsAppended(_ count: Int = 1) {
        guard lanes.isEmpty else {
            for lane in lanes { lane.recordsAppended(count) }
            return
        }
        let wake = appendLock.withLock { () -> Bool in
            appendedSinceWake += count
            guard !wakeScheduled, appendedSinceWake >= configuration.maxBatchRecords else { return false }
            wakeScheduled = true
            return true
        }
        guard wake else { return }
        eventLoop.execute {
            self.appendLock.withLock {
                self.wakeScheduled = false
                self.appendedSinceWake = 0
            }
            self.run(self.machine.recordsAvailable())
        }
    }

    /// Sends everything appended before this call — including what an earlier run left in the spool —
    /// and calls `completion` once it is all written to the connection, or with a ``LogstashError`` that
    /// says why not (the records then stay spooled). Called on the event loop.
    public func flush(completion: @escaping @Sendable ((any Error)?) -> Void) {
        flush(within: nil, completion: completion)
    }

    /// ``flush(completion:)`` that gives up after `timeout` (`nil`: never): `completion` is then called with a
    /// ``LogstashError/Code/timeout`` error and the flush is forgotten — a collector that never moves again does
    /// not make the flushes waiting for it pile up.
    public func flush(within timeout: Duration?, completion: @escaping @Sendable ((any Error)?) -> Void) {
        let upTo = spool.endPosition
        guard lanes.isEmpty else {
            flushLanes(upTo: upTo, until: timeout.map { ContinuousClock.now.advanced(by: $0) }, completion: completion)
            return
        }
        flush(upTo: upTo, within: timeout, completion: completion)
    }

    /// A lane's part of a load-balanced flush round: ``flush(within:completion:)`` that, given up after `round`,
    /// answers ``laneRoundOver`` — not a timeout of the lane's own, such as its TLS handshake's, which is a failure
    /// that says why (review, helper-60).
    private func flushRound(within round: Duration, completion: @escaping @Sendable ((any Error)?) -> Void) {
        flush(upTo: spool.endPosition, within: round, givingUpWith: Self.laneRoundOver, completion: completion)
    }

    private func flush(
        upTo: SpoolPosition,
        within timeout: Duration?,
        givingUpWith giveUpError: LogstashError? = nil,
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        eventLoop.execute {
            let id = self.nextFlushID
            self.nextFlushID += 1
            let giveUp = timeout.map { timeout in
                self.eventLoop.scheduleTask(in: Self.timeAmount(timeout)) {
                    self.abandonFlush(id: id, after: timeout, with: giveUpError)
                }
            }
            self.flushCallbacks[id] = (completion, giveUp)
            self.run(self.machine.flushRequested(id: id, upTo: upTo))
        }
    }

    /// With load balancing: flushes every lane, then waits until everything before `upTo` is acknowledged (or the
    /// deadline passes). A lane's flush is done once the windows *it* holds are: a window another lane let go
    /// part-way, now in flight on a lane that had a later one acknowledged, still holds events before `upTo` — and the
    /// flush said done with them unacknowledged (review, helper-53). So a round of lane flushes that leaves events
    /// before `upTo` is followed by a wait while a lane has a window in flight, and by another round when none has
    /// (a window let go waits for a lane to take it). It fails, with a lane's reason, when every lane's flush has
    /// failed since the events last moved — in one round or over several (hosts down whose reconnects come at
    /// different times: helper-61) — and nothing is in flight; or when rounds with nothing in flight move nothing
    /// (review, helper-58: no lane takes them; a flush must not poll for ever). It completes on an event loop (a
    /// lane's or this client's), never on the caller's thread.
    private func flushLanes(
        upTo: SpoolPosition,
        until deadline: ContinuousClock.Instant?,
        progress: LaneFlushProgress = LaneFlushProgress(),
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        let remaining = deadline.map { ContinuousClock.now.duration(to: $0) }
        if let remaining, remaining <= .zero {
            // On an event loop, as every other way of finishing (a zero timeout ran it on the caller's thread:
            // helper-58).
            eventLoop.execute { completion(Self.flushTimedOut) }
            return
        }
        let group = LaneGroup(count: lanes.count) { errors in
            if self.lanesFlushed(upTo: upTo) { return completion(nil) }
            // A lane that did not finish its part within the round (a host backing off waits for its timer) is not
            // a failure; a flush fails when every lane's did.
            let failures = errors.filter { ($0.error as? LogstashError)?.message != Self.laneRoundOver.message }
            if failures.count == self.lanes.count, let failure = failures.first { return completion(failure.error) }
            // A round in which a lane is still on its way (connecting, a TLS handshake, a backoff's timer) says
            // nothing about whether a lane will take the events: only rounds every lane finished count as idle.
            let settled = failures.count == errors.count
            var next = progress.afterRound(self.spool.cursor, settled: settled)
            for failure in failures { next.failed(lane: failure.lane, with: failure.error) }
            if next.failedLanes.count == self.lanes.count, (self.dispatcher?.windowsInFlight ?? 0) == 0,
                let failure = next.lastFailure
            {
                return completion(failure)
            }
            self.waitForLanes(upTo: upTo, until: deadline, progress: next, completion)
        }
        // At most a second a round for each lane: a host that is down waits for its backoff's timer (up to 30 s),
        // and the rest may have delivered everything meanwhile (review, helper-59).
        let round = min(remaining ?? Self.laneRound, Self.laneRound)
        // Through this client's loop, as ``start()`` is: after the lanes were started.
        eventLoop.execute {
            for (index, lane) in self.lanes.enumerated() { lane.flushRound(within: round) { group.done(index, $0) } }
        }
    }

    /// The wait of ``flushLanes(upTo:until:progress:completion:)`` after a round, looked at every 10 ms.
    private func waitForLanes(
        upTo: SpoolPosition,
        until deadline: ContinuousClock.Instant?,
        progress: LaneFlushProgress,
        _ completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        if lanesFlushed(upTo: upTo) { return completion(nil) }
        if let deadline, ContinuousClock.now >= deadline { return completion(Self.flushTimedOut) }
        let progress = progress.seen(spool.cursor)
        let inFlight = (dispatcher?.windowsInFlight ?? 0) > 0
        if !inFlight, progress.idleRounds >= LaneFlushProgress.idleRoundsAllowed {
            let left = spool.counterSnapshot.queuedRecords
            return completion(
                LogstashError(
                    code: .connectionLost,
                    message:
                        "Logstash flush: \(left) event(s) are not acknowledged and no connection takes them now; they stay spooled"
                )
            )
        }
        let next = eventLoop.scheduleTask(in: .milliseconds(10)) {
            if inFlight {
                self.waitForLanes(upTo: upTo, until: deadline, progress: progress, completion)
            } else {
                self.flushLanes(upTo: upTo, until: deadline, progress: progress, completion: completion)
            }
        }
        // A loop shut down before it ran (a group of the caller's): the flush is told, not forgotten (helper-58).
        next.futureResult.whenFailure { _ in
            completion(LogstashError(code: .shutdown, message: "the Logstash client shut down; records stay spooled"))
        }
    }

    /// Whether every record before `upTo` is acknowledged (or none is left at all).
    private func lanesFlushed(upTo: SpoolPosition) -> Bool {
        spool.cursor >= upTo || spool.counterSnapshot.queuedRecords == 0
    }

    /// The longest a lane's part of a load-balanced flush round takes.
    private static let laneRound: Duration = .seconds(1)
    /// What a lane's part of a round answers when it was not done within ``laneRound``: not a failure.
    private static let laneRoundOver = LogstashError(
        code: .timeout,
        message: "this connection's part of a load-balanced flush round is not done yet"
    )

    private static let flushTimedOut = LogstashError(
        code: .timeout,
        message: "Logstash flush did not finish in time; the events stay spooled"
    )

    /// Flush `id` did not complete within `timeout`: its caller is told, and it is forgotten.
    private func abandonFlush(id: Int, after timeout: Duration, with error: LogstashError? = nil) {
        guard let flush = flushCallbacks.removeValue(forKey: id) else { return }
        machine.flushAbandoned(id: id)
        flush.completion(
            error
                ?? LogstashError(
                    code: .timeout,
                    message: "Logstash flush did not finish within \(timeout); the events stay spooled"
                )
        )
    }

    /// Flushes waiting to complete (the client's and its delivery machine's: the same, unless one leaks).
    package func pendingFlushes() async -> (client: Int, machine: Int) {
        guard lanes.isEmpty else {
            var total = (client: 0, machine: 0)
            for lane in lanes {
                let lanePending = await lane.pendingFlushes()
                total.client += lanePending.client
                total.machine += lanePending.machine
            }
            return total
        }
        let counts = try? await eventLoop.submit { (self.flushCallbacks.count, self.machine.pendingFlushCount) }.get()
        return counts ?? (0, 0)
    }

    /// Sends everything appended before this call; see ``flush(completion:)``.
    public func flush() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            flush { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
    }

    /// Sends what is queued (within ``Configuration/shutdownTimeout``), closes the connection gracefully
    /// and stops. What could not be sent stays in the spool for the next run. Calls `completion` once.
    ///
    /// While a connection is being made it waits for it up to ``Configuration/shutdownTimeout`` after the attempt
    /// began (a ``flush(completion:)`` just before may have waited for the same attempt), not at all with nothing
    /// queued; during a reconnect's backoff it stops at once. With several hosts, an attempt that hangs (a
    /// blackholed collector) gets only its share of that time while another host has not been tried.
    public func shutdown(completion: @escaping @Sendable () -> Void) {
        shutdown(reporting: { _ in completion() })
    }

    /// ``shutdown(completion:)``, and says why it did not end cleanly: `nil`, or a ``LogstashError`` such as a
    /// timeout, a close the collector did not confirm, or no connection — the records not confirmed stay spooled.
    public func shutdown(reporting completion: @escaping @Sendable (LogstashError?) -> Void) {
        guard lanes.isEmpty else {
            let group = LaneGroup(count: lanes.count) { errors in
                completion(errors.compactMap { $0.error as? LogstashError }.first)
            }
            // Through this client's loop, as ``start()`` is: a shutdown right after start reaches each lane after
            // its start (a lane not started yet would stop without sending what is queued).
            eventLoop.execute {
                for (index, lane) in self.lanes.enumerated() { lane.shutdown(reporting: { group.done(index, $0) }) }
            }
            return
        }
        eventLoop.execute {
            if self.isShutDown {
                completion(self.machine.shutdownFailure)
                return
            }
            if self.shutdownCallbacks.isEmpty { self.giveUpAnAttemptThatHadItsShare() }
            self.shutdownCallbacks.append(completion)
            guard self.shutdownCallbacks.count == 1 else { return }
            if !self.started {
                self.started = true
                self.finishShutdown()
                return
            }
            self.run(self.machine.shutdownRequested(nothingToSend: self.spool.counterSnapshot.queuedRecords == 0))
            self.shareShutdownTimeWithTheOtherHosts()
        }
    }

    /// Sends what is queued, closes gracefully and stops; see ``shutdown(reporting:)``. Returns why it did not
    /// end cleanly, or `nil`.
    @discardableResult
    public func shutdown() async -> LogstashError? {
        await withCheckedContinuation { (continuation: CheckedContinuation<LogstashError?, Never>) in
            shutdown(reporting: { continuation.resume(returning: $0) })
        }
    }

    /// How many writes to the collector have completed, on every connection so far: it grows while the collector
    /// takes events (a write completes once the kernel took its bytes; a collector that stops reading fills the
    /// buffers, and writes stop completing). Any thread; no wait for the event loop.
    package var completedWrites: UInt64 {
        lanes.isEmpty ? writesCompleted.current : lanes.reduce(0) { $0 + $1.completedWrites }
    }

    /// A snapshot of the counters (waits briefly for the event loop).
    public func counters() async -> Counters {
        if !lanes.isEmpty {
            var total = Counters(
                queued: 0,
                spooledBytes: 0,
                sent: 0,
                resent: 0,
                dropped: 0,
                connects: 0,
                connectionErrors: 0
            )
            for lane in lanes {
                let counters = await lane.counters()
                total.queued = counters.queued
                total.spooledBytes = counters.spooledBytes
                total.dropped = counters.dropped
                total.sent += counters.sent
                total.resent += counters.resent
                total.connects += counters.connects
                total.connectionErrors += counters.connectionErrors
                total.acknowledged += counters.acknowledged
                total.lastConnectionError = total.lastConnectionError ?? counters.lastConnectionError
            }
            return total
        }
        let spoolCounters = spool.counterSnapshot
        let machineCounters = try? await eventLoop.submit {
            (counters: self.machine.counters, unresolvedError: self.machine.unresolvedError)
        }.get()
        return Counters(
            queued: spoolCounters.queuedRecords,
            spooledBytes: spoolCounters.queuedBytes,
            sent: machineCounters?.counters.sentRecords ?? 0,
            resent: machineCounters?.counters.resentRecords ?? 0,
            dropped: spoolCounters.droppedRecords,
            connects: machineCounters?.counters.connects ?? 0,
            connectionErrors: machineCounters?.counters.connectionErrors ?? 0,
            lastConnectionError: machineCounters?.unresolvedError,
            acknowledged: machineCounters?.counters.acknowledgedRecords ?? 0
        )
    }

    // MARK: - Carrying out actions (event loop)

    /// After actions that changed the delivery counters or acknowledged records: tells the ``observeDelivery(_:)``
    /// observer.
    private func tellDeliveryObserver() {
        guard let deliveryObserver else { return }
        let counters = machine.counters
        guard counters != observedCounters || acknowledgedUnobserved else { return }
        let sent = counters.sentRecords &- min(observedCounters.sentRecords, counters.sentRecords)
        let resent = counters.resentRecords &- min(observedCounters.resentRecords, counters.resentRecords)
        observedCounters = counters
        acknowledgedUnobserved = false
        deliveryObserver(sent, resent)
    }

    private func run(_ actions: [DeliveryAction<ContinuousClock.Instant>]) {
        eventLoop.assertInEventLoop()
        defer { tellDeliveryObserver() }
        // After the actions that come with the close (the "connection lost" line names the host that failed).
        var failOverAfterwards = false
        defer { if failOverAfterwards { failOver() } }
        for action in actions {
            switch action {
            case .connect:
                if failOverBeforeConnecting {
                    failOverBeforeConnecting = false
                    failOver()
                }
                connect()
            case .readBatch(let from, let maxBytes, let maxRecords):
                let batch = source.read(from: from, maxBytes: maxBytes, maxRecords: maxRecords, reusing: &readStorage)
                run(machine.batchRead(batch))
            case .write(let batch):
                write(batch)
            case .acknowledge(let upTo):
                source.acknowledge(upTo: upTo)
                acknowledgedUnobserved = true
            case .acknowledgeExtent(let extent):
                source.acknowledge(extent)
                acknowledgedUnobserved = true
            case .acknowledgeRecords(let from, let count):
                // A partial ACK: the source finds where the acknowledged records end.
                acknowledgedUnobserved = true
                run(machine.recordsAcknowledged(upTo: source.acknowledgeRecords(from: from, count: count)))
            case .scheduleTimer(let instant):
                scheduleTimer(at: instant)
            case .close(let graceful):
                // A machine drops a connection itself (Beats: no ACK in time, a malformed answer; json_lines: a write
                // the collector did not take in time): fail over then too.
                if !graceful, channel != nil {
                    source.connectionLost()
                    if shutdownCallbacks.isEmpty { failOverAfterwards = true }
                }
                close(graceful: graceful)
            case .completeFlush(let id, let error):
                if let flush = flushCallbacks.removeValue(forKey: id) {
                    // What was written is counted before anyone waiting for it is told.
                    tellDeliveryObserver()
                    flush.timeout?.cancel()
                    flush.completion(error)
                }
            case .reportActivity(let line):
                activity?(line)
            case .deliveryResumed:
                reportDrops()
            case .shutdownComplete:
                finishShutdown()
            }
        }
    }

    /// Reports the events the spool dropped at its cap since the last report, if any (event loop).
    private func reportDrops() {
        let dropped = source.takeDropsToReport()
        guard dropped > 0 else { return }
        activity?("\(dropped) events were dropped because the spool was full")
        onDeliveryResumed?(dropped)
    }

    private func connect() {
        generation += 1
        let generation = generation
        let host = configuration.hosts[currentHost]
        let tls = tlsByHost[currentHost]
        let beats = beats
        connectInProgress = true
        connectStarted = .now()
        if shutdownCallbacks.isEmpty { shutdownClockStart = connectStarted }
        handshakeTimedOut = false
        largestPeerWindow = 0
        closeInfo = nil
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(Self.timeAmount(configuration.connectTimeout))
            // TCP_NODELAY is on by default in NIO's bootstraps (set at IPPROTO_TCP). Never spell it
            // `socketOption(.tcp_nodelay)`: that sets option 1 at SOL_SOCKET, which is SO_DEBUG — it needs
            // CAP_NET_ADMIN, so every connect of a non-root program failed with EACCES.
            .channelInitializer { [self] channel in
                // A channel of an attempt given up (another address of its host, tried after): not connected at all.
                guard generation == self.generation else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                connectingChannels.append(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        CloseObserver { [weak self] info in
                            self?.connectionClosing(generation: generation, info: info)
                        }
                    )
                    if let tls {
                        let sslHandler = try NIOSSLClientHandler(
                            context: tls.context,
                            serverHostname: tls.serverHostname
                        )
                        try channel.pipeline.syncOperations.addHandler(sslHandler)
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        LogstashChannelHandler(
                            client: self,
                            generation: generation,
                            tls: tls,
                            decodesAcks: beats != nil
                        )
                    )
                }
            }
        defer { shareShutdownTimeWithTheOtherHosts() }
        bootstrap.connect(host: host.host, port: host.port).hop(to: eventLoop).whenComplete { result in
            guard generation == self.generation else {
                if case .success(let channel) = result { channel.close(promise: nil) }
                return
            }
            self.connectingChannels.removeAll()
            switch result {
            case .success(let channel):
                self.channel = channel
                if tls == nil {
                    self.connectInProgress = false
                    self.shareTimer?.cancel()
                    self.hostsFailedInARow = 0
                    self.run(self.machine.connected())
                } else {
                    self.handshakeTimeout = self.eventLoop.scheduleTask(
                        in: Self.timeAmount(self.configuration.connectTimeout)
                    ) {
                        guard generation == self.generation, self.connectInProgress else { return }
                        self.handshakeTimedOut = true
                        channel.close(promise: nil)
                    }
                }
            case .failure(let error):
                self.connectInProgress = false
                self.shareTimer?.cancel()
                self.connectFailed(self.describeConnectError(error))
            }
        }
    }

    /// A shutdown waits while a connect is in progress: as long as another host has not been tried since the last
    /// connection or backoff, the attempt gets only its share of what is left of ``Configuration/shutdownTimeout``
    /// (counted, as the shutdown's deadline is, from the attempt the shutdown found), then is given up as a failed
    /// connect, and the next host is tried at once. A blackholed collector answers nothing, and the connect timeout
    /// (10 s by default) may be longer than the whole shutdown (5 s): without this, a program with a second
    /// collector up would exit without having tried it.
    private func shareShutdownTimeWithTheOtherHosts() {
        guard connectInProgress, !shutdownCallbacks.isEmpty, !isShutDown, let share = connectShareOfTheShutdown
        else { return }
        let generation = generation
        shareTimer?.cancel()
        shareTimer = eventLoop.scheduleTask(deadline: connectStarted + share) {
            guard generation == self.generation, self.connectInProgress else { return }
            self.abandonConnect(waited: .nanoseconds(share.nanoseconds))
        }
    }

    /// A shutdown asked for (with something to send) while a connect has already hung for longer than its share of
    /// the shutdown's time: given up at once, so that the next host is tried within the shutdown. (The machine counts
    /// a waiting shutdown's deadline from the attempt it finds: this one's may have passed already — a program that
    /// exits some seconds after a blackholed host's attempt began — and it would end the shutdown at once.)
    private func giveUpAnAttemptThatHadItsShare() {
        guard started, connectInProgress, spool.counterSnapshot.queuedRecords > 0,
            let share = connectShareOfTheShutdown
        else { return }
        let waited = NIODeadline.now() - connectStarted
        guard waited >= share else { return }
        abandonConnect(waited: .nanoseconds(waited.nanoseconds))
    }

    /// The connect in progress's share of what is left of ``Configuration/shutdownTimeout`` (counted from
    /// `shutdownClockStart`: with no shutdown waiting yet, from this attempt — the whole timeout) among the hosts not
    /// tried in this round, it included; `nil` when it is the last of them (the shutdown's own deadline ends it).
    private var connectShareOfTheShutdown: TimeAmount? {
        let untried = configuration.hosts.count - hostsFailedInARow
        guard untried > 1 else { return nil }
        let deadline = shutdownClockStart + Self.timeAmount(configuration.shutdownTimeout)
        return .nanoseconds(max(0, (deadline - connectStarted).nanoseconds / Int64(untried)))
    }

    /// Gives up the connect in progress after `waited` (see ``shareShutdownTimeWithTheOtherHosts()``).
    private func abandonConnect(waited: Duration) {
        // The attempt's late answer is ignored, and a connection it still makes is closed (see ``connect()``).
        generation += 1
        connectInProgress = false
        handshakeTimeout?.cancel()
        shareTimer?.cancel()
        if let channel {
            // Connected, its TLS handshake not finished: nothing was sent on it.
            self.channel = nil
            channel.close(promise: nil)
            releaseBuffers()
            source.connectionLost()
        }
        // Still connecting: closing its sockets ends the attempt (the kernel would retry its SYN for minutes).
        closeConnectingChannels()
        connectFailed(
            LogstashError(
                code: .timeout,
                message:
                    "no answer within \(DeliveryWording.seconds(waited)); a shutdown is waiting, and the hosts not tried yet share its \(DeliveryWording.seconds(configuration.shutdownTimeout))"
            )
        )
    }

    /// Closes the channels of a connect in progress, before one connected. Bump the generation first (see
    /// ``finishShutdown()``).
    private func closeConnectingChannels() {
        for channel in connectingChannels { channel.close(promise: nil) }
        connectingChannels.removeAll()
    }

    /// The TLS handshake and pin check succeeded on connection `generation`.
    func tlsReady(generation: Int, detail: String) {
        eventLoop.assertInEventLoop()
        guard generation == self.generation, connectInProgress else { return }
        connectInProgress = false
        hostsFailedInARow = 0
        handshakeTimeout?.cancel()
        shareTimer?.cancel()
        activity?(detail)
        run(machine.connected())
    }

    /// The collector acknowledged up to event `sequence` of the window on connection `generation` (Beats).
    func ackReceived(generation: Int, sequence: UInt32) {
        eventLoop.assertInEventLoop()
        guard generation == self.generation, channel != nil else { return }
        run(machine.ackReceived(sequence: sequence))
    }

    /// The connect to the current host failed: with several hosts, the next one is tried at once unless every host
    /// failed since the last connection or backoff (then the machine backs off, and the next host is tried after).
    /// The machine's lines name the host that failed: the failover comes after them, before its next `.connect`.
    private func connectFailed(_ failure: LogstashError) {
        hostsFailedInARow += 1
        let hostsTried = hostsFailedInARow
        let tryingAnotherHost = hostsTried < configuration.hosts.count
        if !tryingAnotherHost { hostsFailedInARow = 0 }
        failOverBeforeConnecting = true
        run(machine.connectFailed(failure, tryingAnotherHost: tryingAnotherHost, hostsTried: hostsTried))
        if failOverBeforeConnecting {
            failOverBeforeConnecting = false
            failOver()
        }
    }

    /// After a failed connect or a lost connection: the next host, if there are several.
    private func failOver() {
        guard configuration.hosts.count > 1, !isShutDown else { return }
        let failed = configuration.endpoint(of: configuration.hosts[currentHost])
        currentHost = (currentHost + 1) % configuration.hosts.count
        let next = configuration.endpoint(of: configuration.hosts[currentHost])
        machine.endpoint = next
        activity?("failing over from \(failed) to \(next)")
    }

    /// Connection `generation` is being closed; `info` is what the kernel said about it just before.
    private func connectionClosing(generation: Int, info: TCPConnectionInfo?) {
        eventLoop.assertInEventLoop()
        guard generation == self.generation else { return }
        closeInfo = info
    }

    /// Connection `generation` is closed; `error` is the first error seen on it.
    func channelClosed(generation: Int, error: (any Error)?) {
        eventLoop.assertInEventLoop()
        guard generation == self.generation else { return }
        channel = nil
        releaseBuffers()
        source.connectionLost()
        handshakeTimeout?.cancel()
        if connectInProgress {
            connectInProgress = false
            let failure =
                handshakeTimedOut
                ? LogstashError(
                    code: .timeout,
                    message:
                        "the TLS handshake with \(configuration.endpoint(of: configuration.hosts[currentHost])) did not finish within \(configuration.connectTimeout): the collector may speak plain TCP on this port (then turn TLS off: logstashUseTLS = false; justlog ship --plain)"
                )
                : describeConnectError(error ?? ChannelError.eof)
            connectFailed(failure)
            return
        }
        if machine.isClosing, Self.isCleanEnd(error) {
            // Where the kernel can't say (not Linux), a clean close is taken as the end of a collector that read
            // everything, as json_lines servers do; on Linux only a close that came after ours counts.
            #if os(Linux)
            let peerClosedAfterUs = closeInfo?.peerClosedAfterUs ?? false
            #else
            let peerClosedAfterUs = true
            #endif
            run(machine.connectionClosed(error: nil, peerClosedAfterUs: peerClosedAfterUs))
        } else {
            let wasClosing = machine.isClosing
            run(
                machine.connectionClosed(
                    error: error.map {
                        $0 as? LogstashError
                            ?? LogstashError(code: .connectionLost, message: "connection error", cause: $0)
                    },
                    peerClosedAfterUs: true
                )
            )
            if !wasClosing { failOver() }
        }
    }

    private func write(_ batch: SpoolBatch) {
        guard let channel else {
            // The window goes back in line for any lane, as at every other loss (review, helper-59).
            source.connectionLost()
            run(
                machine.connectionClosed(
                    error: LogstashError(code: .connectionLost, message: "no connection to write to"),
                    peerClosedAfterUs: false
                )
            )
            return
        }
        let generation = generation
        // The last write's buffer: the channel let go of it when that write completed.
        var buffer = outgoing ?? channel.allocator.buffer(capacity: configuration.maxBatchBytes)
        outgoing = nil
        buffer.clear()
        if let beats {
            buffer.writeBytes(LumberjackEncoder.window(of: batch, compressionLevel: beats.compressionLevel))
        } else {
            buffer.writeBytes(batch.bytes)
        }
        outgoing = buffer
        writeContinues = continuing
        writing = true
        defer { writing = false }
        channel.writeAndFlush(buffer).hop(to: eventLoop).whenComplete { result in
            // A failed write closes the channel: channelClosed reports it.
            guard case .success = result, generation == self.generation else { return }
            self.writesCompleted.withLock { $0 += 1 }
            let bufferBound = self.beats == nil ? self.measuredBufferBound(channel) : nil
            if let bufferBound { self.warnIfResendWindowExceedsSpool(bufferBound) }
            // The machine learns of the write now, before anything the connection brings next (a Beats ACK).
            var reads: [DeliveryAction<ContinuousClock.Instant>] = []
            var now: [DeliveryAction<ContinuousClock.Instant>] = []
            for action in self.machine.writeCompleted(bufferBound: bufferBound) {
                if case .readBatch = action { reads.append(action) } else { now.append(action) }
            }
            self.run(now)
            // The collector takes events again after it took none for a while on this connection (no reconnection:
            // no `deliveryResumed`), and the spool dropped some meanwhile.
            self.reportDrops()
            if !reads.isEmpty {
                self.readAfterWrite(reads, completedAtOnce: self.writing, generation: generation)
            }
        }
    }

    /// Reads (and writes) the next batch after a completed write on a stack of its own, as a task of the event loop,
    /// pausing now and then for the loop's other channels.
    ///
    /// A write the socket takes at once completes before `writeAndFlush` returns, and its completion runs right away,
    /// inside ``write(_:)``: reading and writing the next batch from there nested it in this one, and so on for as
    /// long as the socket kept taking them — the stack grew by a batch each time, without bound (a backlog of small
    /// batches to a fast collector overflowed it), and the batch and buffer held by the frames below could not be
    /// reused. But tasks that queue tasks keep the event loop from polling its sockets: a backlog sent at full speed
    /// would hold up every other channel on the loop (an application's server, on NIO's shared group) until it was
    /// sent. So once a run of such writes — each made by the last one's deferred read and completed at once — has
    /// gone on for ``longestRunOfWrites``, the next read waits ``pauseForOtherChannels``, which lets the loop poll
    /// unless other tasks keep it busy that long (NIO runs ready tasks until none is left before it polls). A read
    /// for a connection that is gone meanwhile is dropped (the machine asks again on the next one).
    private func readAfterWrite(
        _ reads: [DeliveryAction<ContinuousClock.Instant>],
        completedAtOnce: Bool,
        generation: Int
    ) {
        let next: @Sendable () -> Void = {
            // (A peer's close keeps the generation but takes the channel: the machine forgot the read then too.)
            guard generation == self.generation, self.channel != nil else { return }
            self.continuing = true
            defer { self.continuing = false }
            self.run(reads)
        }
        let now = ContinuousClock.now
        // A write that completed later waited for the socket, and one not made here began a run: the loop polled.
        guard completedAtOnce, writeContinues, let start = runOfWritesStart else {
            runOfWritesStart = now
            eventLoop.execute(next)
            return
        }
        if start.duration(to: now) < Self.longestRunOfWrites {
            eventLoop.execute(next)
        } else {
            runOfWritesStart = nil
            eventLoop.scheduleTask(in: Self.pauseForOtherChannels) { next() }
        }
    }

    /// See ``readAfterWrite(_:completedAtOnce:generation:)``: at most a few percent of a backlog's sending time goes
    /// to the pauses.
    private static let longestRunOfWrites = Duration.milliseconds(2)
    private static let pauseForOtherChannels = TimeAmount.microseconds(20)

    /// Warns once when json_lines' resend window — the larger of ``Configuration/resendWindowBytes`` and
    /// `bufferBound`, what the connection's buffers can hold unread — is more than the spool keeps besides its two
    /// newest segments. A line is forgotten only after that many more bytes followed it, so during a burst longer
    /// than the spool none is, and the cap drops the oldest: counted and reported, but some before they were sent,
    /// while the collector is up and reading. (A host whose `tcp_rmem` allows 32 MiB passes the default 64 MiB.)
    private func warnIfResendWindowExceedsSpool(_ bufferBound: Int) {
        let window = max(bufferBound, configuration.resendWindowBytes)
        let spoolConfiguration = spool.configuration
        let keepable = spoolConfiguration.maxTotalBytes - 2 * spoolConfiguration.segmentBytes
        guard !warnedResendWindow, window > keepable else { return }
        warnedResendWindow = true
        // Rounded up without `bytes + 2^20 − 1`, which a cap near `Int.max` overflowed (review, helper-49).
        let mib = { (bytes: Int) in "\(bytes >> 20 + (bytes & ((1 << 20) - 1) == 0 ? 0 : 1)) MiB" }
        let endpoint = configuration.endpoint(of: configuration.hosts[currentHost])
        warning(
            "JustLog Logstash: the connection to \(endpoint) can hold \(mib(window)) unread, more than the spool keeps unconfirmed (\(mib(keepable)) of its \(mib(spoolConfiguration.maxTotalBytes)) cap): json_lines keeps each event until that much more was sent after it, so a burst longer than the spool makes it drop events at its cap (counted), some before they are sent. Raise the spool capacity above \(mib(window.addingReportingOverflow(2 * spoolConfiguration.segmentBytes).partialValue)), or use the Beats transport."
        )
    }

    /// Lets go of the memory kept for reads and writes (the connection is gone).
    private func releaseBuffers() {
        readStorage = []
        outgoing = nil
    }

    private func close(graceful: Bool) {
        guard let channel else {
            // Still connecting: forget the attempt and close its sockets (a late success is closed on arrival).
            if connectInProgress {
                connectInProgress = false
                generation += 1
                shareTimer?.cancel()
                closeConnectingChannels()
            }
            return
        }
        if graceful {
            channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
        } else {
            self.channel = nil
            generation += 1
            releaseBuffers()
            channel.close(promise: nil)
        }
    }

    private func scheduleTimer(at instant: ContinuousClock.Instant) {
        timer?.cancel()
        let delay = ContinuousClock.now.duration(to: instant)
        timer = eventLoop.scheduleTask(in: Self.timeAmount(max(delay, .zero))) {
            self.run(self.machine.timerFired())
        }
    }

    private func finishShutdown() {
        guard !isShutDown else { return }
        // Before the callbacks: the destination closes the spool once told, and its gauges then read nothing.
        tellDeliveryObserver()
        isShutDown = true
        timer?.cancel()
        handshakeTimeout?.cancel()
        shareTimer?.cancel()
        // The generation first: closing a connecting channel lets Happy Eyeballs start the next address at once,
        // whose channel must find its attempt given up.
        generation += 1
        closeConnectingChannels()
        if let channel {
            self.channel = nil
            channel.close(promise: nil)
        }
        releaseBuffers()
        let error = LogstashError(code: .shutdown, message: "the Logstash client shut down; records stay spooled")
        for flush in flushCallbacks.values {
            flush.timeout?.cancel()
            flush.completion(error)
        }
        flushCallbacks.removeAll()
        let callbacks = shutdownCallbacks
        shutdownCallbacks.removeAll()
        let failure = machine.shutdownFailure
        for callback in callbacks { callback(failure) }
    }

    // MARK: - Helpers

    /// Our send buffer plus twice the largest window the peer advertised on this connection: the most bytes
    /// that can sit between a completed write and the collector's application (see ConnectionStateMachine).
    private func measuredBufferBound(_ channel: any Channel) -> Int? {
        guard let info = TCPConnectionInfo.read(channel), info.peerWindow > 0 || largestPeerWindow > 0 else {
            return nil
        }
        largestPeerWindow = max(largestPeerWindow, info.peerWindow)
        return info.sendBuffer + 2 * Int(largestPeerWindow)
    }

    private func describeConnectError(_ error: any Error) -> LogstashError {
        if let error = error as? LogstashError { return error }
        let text = "\(error)"
        let host = configuration.hosts[currentHost]
        let endpoint = configuration.endpoint(of: host)
        let tls = tlsByHost[currentHost]
        if error is NIOSSLExtraError || text.contains("CERTIFICATE_VERIFY_FAILED")
            || text.contains("failedToValidateHostname")
        {
            return LogstashError(
                code: .certificateRejected,
                message:
                    "TLS: the server certificate of \(host.host):\(host.port) was refused (untrusted, expired or for another host); set the CA file to trust a private CA",
                cause: text
            )
        }
        if tls != nil, Self.isCleanEnd(error) {
            return LogstashError(
                code: .connectFailed,
                message:
                    "\(endpoint) closed the connection during the TLS handshake: the collector may speak plain TCP on this port (then turn TLS off: logstashUseTLS = false; justlog ship --plain)",
                cause: text
            )
        }
        return LogstashError(code: .connectFailed, message: "can't connect", cause: text)
    }

    /// An end of stream without a transport error: EOF, or a TLS peer closing without close_notify.
    private static func isCleanEnd(_ error: (any Error)?) -> Bool {
        guard let error else { return true }
        if let error = error as? NIOSSLError, case .uncleanShutdown = error { return true }
        if let error = error as? ChannelError, error == .eof || error == .outputClosed { return true }
        return false
    }

    package static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        // Capped at a year: longer would overflow nanoseconds in an Int64 (and means "never" anyway).
        let cappedSeconds = min(max(seconds, 0), 365 * 86_400)
        return .nanoseconds(
            cappedSeconds * 1_000_000_000 + (cappedSeconds == seconds ? attoseconds / 1_000_000_000 : 0)
        )
    }
}

/// How a load-balanced flush moves, since the spool's cursor last did: rounds of lane flushes that every lane
/// finished (none was still connecting or waiting) and that ended with nothing in flight, and the lanes whose flush
/// failed.
private struct LaneFlushProgress: Sendable {
    /// Such rounds in a row before the flush gives up.
    static let idleRoundsAllowed = 3
    var cursor: SpoolPosition?
    var idleRounds = 0
    /// The lanes whose part of a round failed (not merely unfinished), and the latest such failure.
    private(set) var failedLanes: Set<Int> = []
    private(set) var lastFailure: (any Error)?

    init(cursor: SpoolPosition? = nil) {
        self.cursor = cursor
    }

    mutating func failed(lane: Int, with error: any Error) {
        failedLanes.insert(lane)
        lastFailure = error
    }

    /// After a wait's look at `cursor`: moved, and the count starts again.
    func seen(_ cursor: SpoolPosition) -> LaneFlushProgress {
        guard let last = self.cursor, cursor <= last else { return LaneFlushProgress(cursor: cursor) }
        return self
    }

    /// After a round that ended with the cursor at `cursor`; `settled`: every lane finished its part.
    func afterRound(_ cursor: SpoolPosition, settled: Bool) -> LaneFlushProgress {
        guard let last = self.cursor, cursor <= last else { return LaneFlushProgress(cursor: cursor) }
        var next = self
        next.idleRounds += settled ? 1 : 0
        return next
    }
}

/// Completes once each of `count` lanes called ``done(_:_:)``, with the errors they reported and whose.
private final class LaneGroup: @unchecked Sendable {
    private let lock = SpoolLock()
    private var remaining: Int
    private var errors: [(lane: Int, error: any Error)] = []
    private let completion: @Sendable ([(lane: Int, error: any Error)]) -> Void

    init(count: Int, completion: @escaping @Sendable ([(lane: Int, error: any Error)]) -> Void) {
        self.remaining = count
        self.completion = completion
    }

    func done(_ lane: Int, _ error: (any Error)?) {
        let finished = lock.withLock { () -> [(lane: Int, error: any Error)]? in
            if let error { errors.append((lane, error)) }
            remaining -= 1
            return remaining == 0 ? errors : nil
        }
        if let finished { completion(finished) }
    }
}
