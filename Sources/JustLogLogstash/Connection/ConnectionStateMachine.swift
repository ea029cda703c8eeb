import JustLogCore

/// The Logstash client's decisions — when to connect, what to send, what the spool may forget, when to
/// retry — as a value that does no I/O: each input returns the ``Action``s the transport must carry out.
///
/// Generic over `Clock` so that tests drive time by hand. All inputs must come from one thread (the
/// transport's event loop).
///
/// ## Policies
/// - **Dispatch**: a batch is read and written every ``Configuration/sendInterval``, and at once when a
///   full batch is waiting (``recordsAvailable()``), after connecting (the backlog, including what an
///   earlier run left in the spool), while draining for a flush or a shutdown, and after a full batch.
///   One write is in flight at a time, so memory holds at most one batch.
/// - **Reconnect**: exponential backoff from ``Configuration/backoffMinimum`` doubling up to
///   ``Configuration/backoffMaximum``, each delay shortened by a random fraction of at most
///   ``Configuration/backoffJitter`` so that many clients don't reconnect in step.
///
/// ## At-least-once over plain TCP: the resend window
/// A completed write only proves the bytes reached *our* kernel. This machine acknowledges the spool
/// (lets it forget records) only for bytes that were followed, on the same connection, by at least the
/// connection's resend window of more completed bytes. Bytes still unread by the peer application can only
/// sit in our send buffer or in the peer's receive buffer (plus the network in between), and a write
/// completes only once its bytes are in our send buffer; so when `N ≥ our sndbuf + peer rcvbuf` bytes were
/// written after a record, the peer application has read that record.
///
/// The window is sized from the real buffers: after each write the transport reports
/// (``writeCompleted(bufferBound:)``) our send buffer plus twice the largest receive window the peer has
/// advertised on this connection (Linux `TCP_INFO`; a peer that stops reading holds 1.1–1.4× its largest
/// advertised window, measured on this project's machines). The window is the larger of that and
/// ``Configuration/resendWindowBytes`` (16 MiB by default, which also covers a proxy or collector queue that
/// reads ahead up to that size), and it only grows during a connection. A peer with a 64 MiB receive buffer
/// thus raises the window past 128 MiB: nothing is forgotten that it may still hold, and if the spool's cap
/// is smaller, the oldest unconfirmed records are dropped *and counted* at the cap instead of being forgotten
/// silently — during a burst longer than the cap, records not yet sent among them (a host whose `tcp_rmem`
/// allows 32 MiB can pass the default 64 MiB cap: raise the spool's capacity there). After a connection error,
/// everything from the last acknowledged position is resent (duplicates carry the same `event_id`).
///
/// ## Graceful close
/// We half-close; a collector that reads to the end of the stream and then closes its side has read
/// everything. But a collector that half-closes on its own, without reading, sends the same FIN. So a clean
/// close acknowledges everything sent only when the transport says the peer's close came *after* it had
/// acknowledged all our bytes and our FIN (``connectionClosed(error:peerClosedAfterUs:)``); otherwise only
/// what the window proves is acknowledged, and the shutdown reports that the rest stays spooled.
///
/// ## What plain json_lines cannot prove
/// A collector that reads bytes and then loses them itself (killed with events in its own memory queue), or
/// one that receives our FIN, does not read, and then closes its side cleanly, is indistinguishable over TCP
/// from one that processed everything. Such events are lost unless the window still covers them; Logstash's
/// Beats protocol, whose server acknowledges what it queued, closes that gap.
///
/// ## A collector that stops reading
/// A collector that keeps the connection open but stops reading (hung, or a load balancer whose backend is gone)
/// lets our writes pile up in the socket buffers until one no longer completes. A write that has not completed
/// within ``Configuration/writeTimeout`` ends the connection as if it had been lost: the unconfirmed records are
/// resent, after the backoff, to the next host if there are several (the transport fails over), and pending
/// flushes fail at once instead of waiting for a connection that may never move again.
///
/// A collector (or link) that reads, only slower than a batch per timeout, is not one that stopped: after a write
/// timeout batches are a sixteenth the size (down to ``smallestBatchBytes``), and they grow back, doubling, only
/// while a write completes within an eighth of the timeout on a connection that has proven progress (its first
/// writes go into empty socket buffers, however slow the collector). Before, every batch stayed 1 MiB: against a collector
/// reading 20 KB/s each connection ended at its first write past the socket buffers, before anything was proven,
/// and the next resent the same first megabytes — forever (review, helper-71).
///
/// ## Connections that fail right away
/// A connection that ends within ``Configuration/healthyConnectionTime`` of connecting without acknowledging
/// anything counts as a failure for the backoff, like a refused connect: a collector that accepts and then
/// closes or half-closes at once is retried with growing delays, not resent to in a loop.
package struct ConnectionStateMachine<C: Clock>: Sendable where C.Duration == Duration {
    /// The policies.
    package struct Configuration: Sendable {
        /// Time between batched dispatches (the documented `logstashTimeout`). Default 5 s.
        package var sendInterval: Duration = .seconds(5)
        /// Most bytes in one batch. Default 1 MiB.
        package var maxBatchBytes: Int = 1 << 20
        /// Most records in one batch. Default 1000.
        package var maxBatchRecords: Int = 1000
        /// Bytes written after a record before the spool may forget it. Default 16 MiB.
        package var resendWindowBytes: Int = 16 << 20
        /// First reconnect delay. Default 0.5 s.
        package var backoffMinimum: Duration = .milliseconds(500)
        /// Longest reconnect delay. Default 30 s.
        package var backoffMaximum: Duration = .seconds(30)
        /// Largest fraction taken off a reconnect delay at random, 0…1. Default 0.2.
        package var backoffJitter: Double = 0.2
        /// How long a graceful shutdown may take to drain and close before the connection is dropped. Default 5 s.
        package var shutdownTimeout: Duration = .seconds(5)
        /// A write not completed within this long ends the connection (the collector stopped reading). Default 30 s.
        package var writeTimeout: Duration = .seconds(30)
        /// A connection that ends sooner than this after connecting, having acknowledged nothing, counts as a
        /// failure for the backoff. Default 10 s.
        package var healthyConnectionTime: Duration = .seconds(10)
        /// How activity lines name the collector, e.g. `logstash.example.com:5052 (TLS)`.
        package var endpoint: String = "collector"

        package init() {}
    }

    /// What the transport must do (see ``DeliveryAction``; this machine never asks for
    /// ``DeliveryAction/acknowledgeRecords(from:count:)``).
    package typealias Action = DeliveryAction<C.Instant>

    /// Where the connection is.
    package enum State: Sendable, Equatable {
        case idle
        case connecting(since: C.Instant, failures: Int)
        case connected(since: C.Instant, failures: Int)
        case backingOff(until: C.Instant, failures: Int)
        case closing(deadline: C.Instant)
        case closed
    }

    /// What has been sent and resent.
    package typealias Counters = DeliveryCounters

    package var configuration: Configuration
    package private(set) var state: State = .idle
    package private(set) var counters = Counters()
    private let clock: C
    private let random: @Sendable () -> Double

    /// The next record to send on the current connection.
    package private(set) var sendPosition = SpoolPosition(segment: 0, offset: 0)
    /// Everything before this is acknowledged to the spool.
    package private(set) var acknowledgedPosition = SpoolPosition(segment: 0, offset: 0)
    /// The furthest position ever sent, to count resends.
    private var highestSent = SpoolPosition(segment: 0, offset: 0)
    /// Batches written on this connection and not yet acknowledged: where they lie and the connection's byte
    /// count after them.
    private var window: [(extent: SpoolExtent, bytesAfter: Int)] = []
    private var windowStart = 0
    private var connectionBytes = 0
    private var inFlight: SpoolBatch?
    /// When the write of ``inFlight`` must have completed by.
    private var writeDeadline: C.Instant?
    /// The most bytes a batch takes now: ``Configuration/maxBatchBytes``, less after a write timeout (see the type).
    package private(set) var batchBytesLimit: Int
    /// The smallest ``batchBytesLimit`` (a batch holds at least one record all the same).
    package static var smallestBatchBytes: Int { 16 << 10 }
    /// When the timer last asked for fires (the transport keeps only the last one), until it fired.
    private var timerSetFor: C.Instant?
    private var readPending = false
    /// A flush cut the current outage's backoff short (connected at once): later flushes wait for the schedule until
    /// a connection proves healthy — a connection that ends at once proves nothing (review, helper-55: a load
    /// balancer with no backend accepts and closes) (review, helper-53: a program flushing per request against a
    /// collector that is down connected — and handshook — at its request rate).
    private var flushCutTheBackoffShort = false
    private var nextDispatch: C.Instant?
    private var pendingFlushes = PendingFlushes()
    private var shutdownDeadline: C.Instant?
    private var lastError: String?
    /// The last connection error since delivery last made proven progress (kept across reconnects, unlike
    /// `lastError`): why records are still unconfirmed, for a tool's final message.
    package private(set) var unresolvedError: String?
    /// The resend window of the current connection: the configured one, raised to the measured buffers.
    package private(set) var connectionWindow = 0
    /// Why the shutdown did not end cleanly (records left in the spool), once it is complete; `nil` if it did.
    package private(set) var shutdownFailure: LogstashError?
    /// Whether the current connection acknowledged anything.
    private var progressSinceConnect = false

    /// - Parameters:
    ///   - random: a source of numbers in `0..<1` for the jitter (inject a fixed one in tests).
    package init(
        configuration: Configuration,
        clock: C,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.configuration = configuration
        self.clock = clock
        self.random = random
        self.batchBytesLimit = configuration.maxBatchBytes
    }

    // MARK: - Inputs

    /// Starts connecting; `position` is the spool's cursor (the oldest unacknowledged record).
    package mutating func start(at position: SpoolPosition) -> [Action] {
        guard case .idle = state else { return [] }
        sendPosition = position
        acknowledgedPosition = position
        highestSent = position
        state = .connecting(since: clock.now, failures: 0)
        return [.reportActivity("connecting to \(configuration.endpoint)"), .connect]
    }

    /// The connection is up (TCP connected; TLS handshake and certificate checks passed).
    package mutating func connected() -> [Action] {
        guard case .connecting(_, let failures) = state else { return [.close(graceful: false)] }
        state = .connected(since: clock.now, failures: failures)
        connectionWindow = configuration.resendWindowBytes
        progressSinceConnect = false
        counters.connects += 1
        connectionBytes = 0
        window.removeAll()
        windowStart = 0
        inFlight = nil
        writeDeadline = nil
        readPending = false
        lastError = nil
        let now = clock.now
        nextDispatch = now.advanced(by: configuration.sendInterval)
        // The timer before the read: the transport carries out the read's write (and its deadline's timer) at once,
        // and keeps only the last timer asked for.
        var actions: [Action] = [.reportActivity("connected to \(configuration.endpoint)"), .deliveryResumed]
        actions.append(timer(at: timerDeadline()))
        actions += readIfIdle()
        return actions
    }

    /// Connecting failed (resolution, TCP, TLS handshake or certificate check).
    ///
    /// - Parameters:
    ///   - tryingAnotherHost: the transport moves to another of several collectors, one not tried since the last
    ///     connection or backoff: it is tried at once, a new attempt, and waiting flushes and a shutdown wait for it
    ///     (within their own deadlines: a shutdown waiting keeps its deadline; one asked for later counts from the
    ///     new attempt). `false`: back off (a shutdown ends).
    ///   - hostsTried: how many hosts failed in a row, this one included: with `tryingAnotherHost` `false` and more
    ///     than one, every host failed, and the flushes waiting are told so.
    package mutating func connectFailed(
        _ error: LogstashError,
        tryingAnotherHost: Bool = false,
        hostsTried: Int = 1
    ) -> [Action] {
        guard case .connecting(_, let failures) = state else { return [] }
        counters.connectionErrors += 1
        lastError = error.description
        unresolvedError = error.description
        if tryingAnotherHost {
            // A new attempt: a shutdown asked for during it counts from it; one already waiting keeps its deadline.
            if shutdownDeadline == nil { state = .connecting(since: clock.now, failures: failures) }
            return [.reportActivity("connect to \(configuration.endpoint) failed: \(error)"), .connect]
        }
        if shutdownDeadline != nil {
            return finishShutdown(error: error)
        }
        let delay = backoffDelay(failures: failures)
        let until = clock.now.advanced(by: delay)
        state = .backingOff(until: until, failures: failures + 1)
        var actions: [Action] = [
            .reportActivity("connect to \(configuration.endpoint) failed: \(error); reconnecting in \(seconds(delay))")
        ]
        actions += failFlushes(
            DeliveryWording.connectFailedFlushError(
                error,
                endpoint: configuration.endpoint,
                hostsTried: hostsTried,
                retryIn: delay
            )
        )
        actions.append(timer(at: until))
        return actions
    }

    /// The spool answered a ``Action/readBatch(from:maxBytes:maxRecords:)``.
    package mutating func batchRead(_ batch: SpoolBatch) -> [Action] {
        guard readPending else { return [] }
        readPending = false
        guard case .connected = state else { return [] }
        if batch.isEmpty {
            // Everything appended before this read has been written: every pending flush is done.
            sendPosition = max(sendPosition, batch.end)
            var actions = completeAllFlushes()
            if let deadline = shutdownDeadline {
                state = .closing(deadline: deadline)
                actions.append(.reportActivity("closing the connection to \(configuration.endpoint)"))
                actions.append(.close(graceful: true))
            }
            return actions
        }
        inFlight = batch
        let deadline = clock.now.advanced(by: configuration.writeTimeout)
        writeDeadline = deadline
        // While connected a timer is always set (for the next dispatch at the latest), and set again when it fires,
        // for the write deadline too: only a deadline before it needs a timer now. (Not one per write: setting a
        // timer costs the event loop, and its other channels, a little time with every batch.)
        if let set = timerSetFor, set <= deadline { return [.write(batch)] }
        return [.write(batch), timer(at: timerDeadline())]
    }

    /// The write of the batch in flight completed: its bytes are in our kernel's send buffer.
    ///
    /// - Parameter bufferBound: the most bytes our send buffer and the peer's receive buffer can hold now, as
    ///   measured by the transport (`nil`: not measurable here). Raises this connection's resend window.
    package mutating func writeCompleted(bufferBound: Int? = nil) -> [Action] {
        guard case .connected = state, let batch = inFlight else { return [] }
        inFlight = nil
        let limit = batchBytesLimit  // the one this batch was read with
        // A full batch written well within the timeout, on a connection that has proven progress: batches may grow
        // back (see the type). (Not before: on a new connection the socket buffers take the first megabytes at
        // once, however slow the collector — review, helper-73.)
        if let deadline = writeDeadline, progressSinceConnect, batchBytesLimit < configuration.maxBatchBytes,
            batch.bytes.count * 2 >= batchBytesLimit,
            clock.now.duration(to: deadline) > configuration.writeTimeout - configuration.writeTimeout / 8
        {
            batchBytesLimit = min(configuration.maxBatchBytes, batchBytesLimit * 2)
        }
        writeDeadline = nil
        counters.sentRecords += UInt64(batch.recordCount)
        counters.sentBytes += UInt64(batch.bytes.count)
        if batch.start < highestSent {
            counters.resentRecords += UInt64(batch.recordCount)
        }
        highestSent = max(highestSent, batch.end)
        sendPosition = batch.end
        connectionBytes += batch.bytes.count
        window.append((batch.extent, connectionBytes))

        var actions: [Action] = [
            .reportActivity(
                "sent \(batch.recordCount) event\(batch.recordCount == 1 ? "" : "s") (\(batch.bytes.count) bytes) to \(configuration.endpoint)"
            )
        ]
        if let bufferBound, bufferBound > connectionWindow {
            // Report only real growth (by a quarter), not every small step of TCP autotuning.
            if bufferBound > connectionWindow + connectionWindow / 4
                || connectionWindow == configuration.resendWindowBytes
            {
                actions.append(
                    .reportActivity(
                        "the connection to \(configuration.endpoint) can hold \(bufferBound >> 20) MiB unread: events are kept until that much more was sent after them"
                    )
                )
            }
            connectionWindow = bufferBound
        }
        // Acknowledge what at least a window of more bytes have followed.
        // The batches proven, as one extent while they follow one another (as they do on one connection).
        var proven: (extent: SpoolExtent, counted: Bool)?
        while windowStart < window.count, connectionBytes - window[windowStart].bytesAfter >= connectionWindow {
            let next = window[windowStart].extent
            if let sofar = proven {
                let joined = sofar.extent.followed(by: next)
                proven = (joined ?? next, sofar.counted && joined != nil)
            } else {
                proven = (next, true)
            }
            windowStart += 1
        }
        if windowStart > 1024 {
            window.removeFirst(windowStart)
            windowStart = 0
        }
        if let proven, proven.extent.end > acknowledgedPosition {
            progressSinceConnect = true
            unresolvedError = nil
            // Counted only from where the last acknowledgement ended; the spool checks its cursor too.
            let counted = proven.counted && proven.extent.start == acknowledgedPosition
            acknowledgedPosition = proven.extent.end
            actions.append(counted ? .acknowledgeExtent(proven.extent) : .acknowledge(upTo: proven.extent.end))
        }
        actions += completeFlushes(upTo: sendPosition)
        let full =
            batch.recordCount >= configuration.maxBatchRecords
            || batch.bytes.count + 1024 >= limit
        if full || !pendingFlushes.isEmpty || shutdownDeadline != nil {
            actions += readIfIdle()
        }
        return actions
    }

    /// The connection closed: `error` is `nil` for a clean end of stream.
    ///
    /// - Parameter peerClosedAfterUs: for a clean end during a graceful close, whether the peer's close came after
    ///   it had acknowledged every byte we sent and our FIN (the transport checks; pass `true` where it can't).
    ///   Only then does the close prove that everything sent was read.
    package mutating func connectionClosed(error: LogstashError?, peerClosedAfterUs: Bool = true) -> [Action] {
        switch state {
        case .closing:
            if error == nil && peerClosedAfterUs {
                // We half-closed and the peer closed after reading up to our FIN: all of it was read.
                var actions: [Action] = []
                if sendPosition > acknowledgedPosition {
                    acknowledgedPosition = sendPosition
                    actions.append(.acknowledge(upTo: sendPosition))
                }
                return actions + finishShutdown(error: nil)
            }
            if error == nil, sendPosition > acknowledgedPosition {
                let error = LogstashError(
                    code: .connectionLost,
                    message:
                        "the collector at \(configuration.endpoint) closed its side before confirming it read the last events; they stay spooled and will be resent"
                )
                return [.reportActivity(error.message)] + finishShutdown(error: error)
            }
            return finishShutdown(error: error)
        case .connected(let since, let failures):
            counters.connectionErrors += 1
            let reason = error ?? LogstashError(code: .connectionLost, message: "the collector closed the connection")
            lastError = reason.description
            unresolvedError = reason.description
            let unproven = sendPosition > acknowledgedPosition
            sendPosition = acknowledgedPosition
            inFlight = nil
            writeDeadline = nil
            readPending = false
            window.removeAll()
            windowStart = 0
            if shutdownDeadline != nil {
                return finishShutdown(error: reason)
            }
            // A connection that acknowledged nothing and ended soon after connecting is a failure, like a
            // refused connect: the backoff grows instead of resending the whole window in a tight loop.
            let productive =
                progressSinceConnect || since.duration(to: clock.now) >= configuration.healthyConnectionTime
            let failures = productive ? 0 : failures
            if productive { flushCutTheBackoffShort = false }
            let delay = backoffDelay(failures: failures)
            let until = clock.now.advanced(by: delay)
            state = .backingOff(until: until, failures: failures + 1)
            let churn =
                failures + 1 >= 3
                ? "; it closed \(failures + 1) connections in a row right after connecting without confirming anything (overloaded, or not reading?)"
                : ""
            var actions: [Action] = [
                .reportActivity(
                    "connection to \(configuration.endpoint) lost: \(reason)\(unproven ? "; unconfirmed events will be resent" : "")\(churn); reconnecting in \(seconds(delay))"
                )
            ]
            actions += failFlushes(
                LogstashError(
                    code: .connectionLost,
                    message:
                        "not delivered: the connection to \(configuration.endpoint) was lost\(churn); records stay spooled and will be resent in \(seconds(delay))",
                    cause: reason.description
                )
            )
            actions.append(timer(at: until))
            return actions
        case .connecting:
            return connectFailed(
                error ?? LogstashError(code: .connectFailed, message: "the connection closed while connecting")
            )
        case .idle, .backingOff, .closed:
            return []
        }
    }

    /// The timer scheduled last fired (stale timers are harmless: the deadline is checked).
    package mutating func timerFired() -> [Action] {
        let now = clock.now
        timerSetFor = nil
        switch state {
        case .backingOff(let until, let failures):
            guard now >= until else { return [timer(at: until)] }
            state = .connecting(since: now, failures: failures)
            return [.reportActivity("connecting to \(configuration.endpoint)"), .connect]
        case .connected:
            if let deadline = shutdownDeadline, now >= deadline {
                return [
                    .reportActivity("shutdown timed out; closing the connection to \(configuration.endpoint)"),
                    .close(graceful: false),
                ]
                    + finishShutdown(
                        error: LogstashError(
                            code: .timeout,
                            message: "shutdown timed out before everything was sent; the rest stays spooled"
                        )
                    )
            }
            if let deadline = writeDeadline, now >= deadline {
                // The collector did not take the whole batch within the timeout: it stopped reading, or reads slower
                // than a batch per timeout — smaller batches from now on (see the type).
                let smaller = max(Self.smallestBatchBytes, batchBytesLimit / 16)
                let note =
                    smaller < batchBytesLimit ? "; batches of at most \(smaller >> 10) KiB from now on" : ""
                batchBytesLimit = min(batchBytesLimit, smaller)
                let stalled = LogstashError(
                    code: .timeout,
                    message:
                        "the collector took no write for \(seconds(configuration.writeTimeout)) (it stopped reading, or reads slower than a batch a timeout)\(note)"
                )
                return [.close(graceful: false)] + connectionClosed(error: stalled)
            }
            var read: [Action] = []
            if let next = nextDispatch, now >= next {
                nextDispatch = now.advanced(by: configuration.sendInterval)
                read = readIfIdle()
            }
            // The timer before the read (see ``connected()``).
            return [timer(at: timerDeadline())] + read
        case .closing(let deadline):
            guard now >= deadline else { return [timer(at: deadline)] }
            return [.close(graceful: false)]
                + finishShutdown(
                    error: LogstashError(code: .timeout, message: "the collector did not close the connection in time")
                )
        case .connecting:
            guard let deadline = shutdownDeadline else { return [] }
            guard now >= deadline else { return [timer(at: deadline)] }
            return [.close(graceful: false)]
                + finishShutdown(
                    error: DeliveryWording.stillConnectingAtShutdown(
                        to: configuration.endpoint,
                        after: configuration.shutdownTimeout
                    )
                )
        case .idle, .closed:
            return []
        }
    }

    /// A full batch is waiting in the spool: send it now rather than at the next interval.
    package mutating func recordsAvailable() -> [Action] {
        guard case .connected = state else { return [] }
        return readIfIdle()
    }

    /// Asks to be told (``Action/completeFlush(id:error:)``) once every record before `upTo` — the spool's
    /// end when the flush was requested — has been written, or why it can't be.
    package mutating func flushRequested(id: Int, upTo: SpoolPosition) -> [Action] {
        switch state {
        case .idle, .closed:
            return [
                .completeFlush(
                    id: id,
                    error: LogstashError(
                        code: .shutdown,
                        message: "the Logstash client is not running; records stay spooled"
                    )
                )
            ]
        case .connected:
            pendingFlushes.add(id: id, upTo: upTo)
            return readIfIdle()
        case .connecting, .closing:
            pendingFlushes.add(id: id, upTo: upTo)
            return []
        case .backingOff(_, let failures):
            // Try now rather than make the caller wait for the backoff — once an outage: after that, at the backoff's
            // pace (its timer is set).
            pendingFlushes.add(id: id, upTo: upTo)
            guard !flushCutTheBackoffShort else { return [] }
            flushCutTheBackoffShort = true
            state = .connecting(since: clock.now, failures: failures)
            return [.reportActivity("connecting to \(configuration.endpoint) (flush requested)"), .connect]
        }
    }

    /// Flush `id`'s caller stopped waiting (its timeout): it is forgotten, not completed.
    package mutating func flushAbandoned(id: Int) {
        pendingFlushes.remove(id: id)
    }

    /// Flushes waiting for records to be delivered.
    package var pendingFlushCount: Int { pendingFlushes.count }

    /// Sends what is queued (within ``Configuration/shutdownTimeout``), closes gracefully, and reports
    /// ``Action/shutdownComplete``. What isn't sent stays in the spool.
    package mutating func shutdownRequested(nothingToSend: Bool = false) -> [Action] {
        let deadline = clock.now.advanced(by: configuration.shutdownTimeout)
        switch state {
        case .idle:
            state = .closed
            return [.shutdownComplete]
        case .backingOff:
            return finishShutdown(
                error: LogstashError(code: .shutdown, message: "shut down while reconnecting; records stay spooled")
            )
        case .connecting(let since, _):
            // A shutdown right after start (or a flush's reconnect) waits for the connection, then sends what is
            // queued as a connected one does; a failed connect ends it, unless the transport tries another host
            // (``connectFailed(_:tryingAnotherHost:hostsTried:)``).
            guard shutdownDeadline == nil else { return [] }
            let decision = ConnectingShutdown(
                attemptSince: since,
                now: clock.now,
                timeout: configuration.shutdownTimeout,
                nothingToSend: nothingToSend,
                endpoint: configuration.endpoint
            )
            switch decision {
            case .wait(let deadline):
                shutdownDeadline = deadline
                return [timer(at: deadline)]
            case .end(let error):
                // Nothing queued (no error): every flush waiting has what it asked for.
                let done = error == nil ? completeAllFlushes() : []
                return [.close(graceful: false)] + done + finishShutdown(error: error)
            }
        case .connected:
            guard shutdownDeadline == nil else { return [] }
            shutdownDeadline = deadline
            // The timer before the read (see ``connected()``).
            let dispatch = timer(at: timerDeadline())
            return [dispatch] + readIfIdle()
        case .closing, .closed:
            return []
        }
    }

    // MARK: - Helpers

    /// The reconnect delay after `failures` consecutive failures, jitter included.
    package func backoffDelay(failures: Int) -> Duration {
        var backoff = ReconnectBackoff()
        backoff.minimum = configuration.backoffMinimum
        backoff.maximum = configuration.backoffMaximum
        backoff.jitter = configuration.backoffJitter
        return backoff.delay(failures: failures, random: random())
    }

    private mutating func readIfIdle() -> [Action] {
        guard case .connected = state, inFlight == nil, !readPending else { return [] }
        readPending = true
        return [
            .readBatch(
                from: sendPosition,
                maxBytes: batchBytesLimit,
                maxRecords: configuration.maxBatchRecords
            )
        ]
    }

    /// Asks for ``timerFired()`` at `instant` (replacing the timer set before).
    private mutating func timer(at instant: C.Instant) -> Action {
        timerSetFor = instant
        return .scheduleTimer(at: instant)
    }

    private func timerDeadline() -> C.Instant {
        var next = nextDispatch ?? clock.now.advanced(by: configuration.sendInterval)
        if let deadline = shutdownDeadline { next = min(next, deadline) }
        if let deadline = writeDeadline { next = min(next, deadline) }
        return next
    }

    private mutating func completeFlushes(upTo position: SpoolPosition) -> [Action] {
        pendingFlushes.takeDone(upTo: position).map { .completeFlush(id: $0, error: nil) }
    }

    private mutating func completeAllFlushes() -> [Action] {
        pendingFlushes.takeAll().map { .completeFlush(id: $0, error: nil) }
    }

    private mutating func failFlushes(_ error: LogstashError) -> [Action] {
        pendingFlushes.takeAll().map { .completeFlush(id: $0, error: error) }
    }

    private mutating func finishShutdown(error: LogstashError?) -> [Action] {
        let hadConnection =
            switch state {
            case .connected, .closing: true
            case .idle, .connecting, .backingOff, .closed: false
            }
        state = .closed
        shutdownFailure = error
        shutdownDeadline = nil
        inFlight = nil
        writeDeadline = nil
        readPending = false
        var actions = failFlushes(error ?? LogstashError(code: .shutdown, message: "the Logstash client shut down"))
        actions.append(
            .reportActivity(DeliveryWording.stopped(hadConnection: hadConnection, to: configuration.endpoint))
        )
        actions.append(.shutdownComplete)
        return actions
    }

    private func seconds(_ duration: Duration) -> String { DeliveryWording.seconds(duration) }
}
