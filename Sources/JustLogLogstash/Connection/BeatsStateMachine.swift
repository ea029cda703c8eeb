/// The Beats (Lumberjack v2) client's decisions — when to connect, what window to send, what the spool may
/// forget, when to give up on a silent collector — as a value that does no I/O: each input returns the
/// ``DeliveryAction``s the transport must carry out. Generic over `Clock` so that tests drive time by hand;
/// all inputs must come from one thread (the transport's event loop).
///
/// ## Acknowledged delivery
/// Records go as windows: the transport writes a window frame and the records as numbered JSON frames
/// (compressed by default), and the collector answers with ACKs carrying the number of the last record it
/// has put in its queue. The spool forgets records **only** up to an acknowledged number: a full ACK lets it
/// forget the window (``DeliveryAction/acknowledge(upTo:)``), a partial one the records it covers
/// (``DeliveryAction/acknowledgeRecords(from:count:)``). There is no resend window: after a lost connection,
/// an ACK timeout or a malformed answer, sending starts again at the first record not acknowledged, so at
/// most one window (minus what was acknowledged of it) is sent twice.
///
/// An ACK of 0, or one that repeats the last number, is a keep-alive: a busy collector's way of saying it
/// is still working on the window. Any ACK restarts the ``Configuration/ackTimeout``; a window that gets
/// none within it is resent on a new connection. An ACK beyond the window is a protocol error.
///
/// ## Adaptive window
/// As Filebeat's: the window starts at ``Configuration/initialWindow`` records, grows by half after each
/// fully acknowledged full window up to ``Configuration/maxWindow``, and halves (down to 1) after each
/// failure. Each window is also bounded by ``Configuration/maxBatchBytes``. One window is in flight at a
/// time, so memory holds at most one batch.
///
/// ## Flush and shutdown
/// A flush completes once everything before its position is *acknowledged*, not merely written. A graceful
/// shutdown sends what is queued, waits for the ACKs, then closes: nothing is left unconfirmed on a clean
/// end, so no close handshake has to prove anything.
package struct BeatsStateMachine<C: Clock>: Sendable where C.Duration == Duration {
    /// The policies.
    package struct Configuration: Sendable {
        /// Time between batched dispatches (the documented `logstashTimeout`). Default 5 s.
        package var sendInterval: Duration = .seconds(5)
        /// Most bytes of records in one window. Default 1 MiB.
        package var maxBatchBytes: Int = 1 << 20
        /// Records in the first window of a run. Default 10 (Filebeat's).
        package var initialWindow: Int = 10
        /// Most records in one window. Default 2048 (Filebeat's `bulk_max_size`).
        package var maxWindow: Int = 2048
        /// How long to wait for an ACK (or keep-alive) before the window is resent on a new connection. Default 30 s.
        package var ackTimeout: Duration = .seconds(30)
        /// Reconnect delays.
        package var backoff = ReconnectBackoff()
        /// How long a graceful shutdown may take to send, be acknowledged and close. Default 5 s.
        package var shutdownTimeout: Duration = .seconds(5)
        /// A connection that ends sooner than this after connecting, having had nothing acknowledged, counts as
        /// a failure for the backoff. Default 10 s.
        package var healthyConnectionTime: Duration = .seconds(10)
        /// How activity lines name the collector, e.g. `logstash.example.com:5044 (TLS, Beats)`.
        package var endpoint: String = "collector"

        package init() {}
    }

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

    /// The window written and not yet fully acknowledged.
    private struct Window: Sendable {
        var batch: SpoolBatch
        /// Records of the window acknowledged so far (the highest ACK).
        var acknowledged = 0
        /// Where the first record not yet acknowledged starts, once the transport said so.
        var acknowledgedEnd: SpoolPosition
        /// An ACK (or keep-alive) must come before this.
        var ackDeadline: C.Instant
        var written = false
        /// A partial ACK is being applied to the spool (waiting for ``recordsAcknowledged(upTo:)``).
        var applying = false
    }

    package var configuration: Configuration
    package private(set) var state: State = .idle
    package private(set) var counters = DeliveryCounters()
    /// The records in the next window.
    package private(set) var windowSize: Int
    /// Everything before this is acknowledged to the spool.
    package private(set) var acknowledgedPosition = SpoolPosition(segment: 0, offset: 0)
    /// The last connection error since the collector last acknowledged something.
    package private(set) var unresolvedError: String?
    /// Why the shutdown did not end cleanly (records left in the spool), once it is complete; `nil` if it did.
    package private(set) var shutdownFailure: LogstashError?

    private let clock: C
    private let random: @Sendable () -> Double
    private var inFlight: Window?
    private var readPending = false
    /// A flush cut the current outage's backoff short (connected at once): later flushes wait for the schedule until
    /// a connection proves healthy — a connection that ends at once proves nothing (review, helper-55: a load
    /// balancer with no backend accepts and closes) (review, helper-53: a program flushing per request against a
    /// collector that is down connected — and handshook — at its request rate).
    private var flushCutTheBackoffShort = false
    private var nextDispatch: C.Instant?
    private var flushes = PendingFlushes()
    private var shutdownDeadline: C.Instant?
    private var highestSent = SpoolPosition(segment: 0, offset: 0)
    private var progressSinceConnect = false

    package init(
        configuration: Configuration,
        clock: C,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.configuration = configuration
        self.clock = clock
        self.random = random
        self.windowSize = max(1, min(configuration.initialWindow, configuration.maxWindow))
    }

    // MARK: - Inputs

    /// Starts connecting; `position` is the spool's cursor (the oldest unacknowledged record).
    package mutating func start(at position: SpoolPosition) -> [Action] {
        guard case .idle = state else { return [] }
        acknowledgedPosition = position
        highestSent = position
        state = .connecting(since: clock.now, failures: 0)
        return [.reportActivity("connecting to \(configuration.endpoint)"), .connect]
    }

    /// The connection is up (TCP connected; TLS handshake and certificate checks passed).
    package mutating func connected() -> [Action] {
        guard case .connecting(_, let failures) = state else { return [.close(graceful: false)] }
        state = .connected(since: clock.now, failures: failures)
        counters.connects += 1
        progressSinceConnect = false
        inFlight = nil
        readPending = false
        nextDispatch = clock.now.advanced(by: configuration.sendInterval)
        // The timer before the read: the transport carries out the read's write (and the timer at its ACK deadline)
        // at once, and keeps only the last timer asked for.
        var actions: [Action] = [.reportActivity("connected to \(configuration.endpoint)"), .deliveryResumed]
        actions.append(.scheduleTimer(at: timerDeadline()))
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
        unresolvedError = error.description
        if tryingAnotherHost {
            // A new attempt: a shutdown asked for during it counts from it; one already waiting keeps its deadline.
            if shutdownDeadline == nil { state = .connecting(since: clock.now, failures: failures) }
            return [.reportActivity("connect to \(configuration.endpoint) failed: \(error)"), .connect]
        }
        if shutdownDeadline != nil { return finishShutdown(error: error) }
        let delay = configuration.backoff.delay(failures: failures, random: random())
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
        actions.append(.scheduleTimer(at: until))
        return actions
    }

    /// The spool answered a ``DeliveryAction/readBatch(from:maxBytes:maxRecords:)``.
    package mutating func batchRead(_ batch: SpoolBatch) -> [Action] {
        guard readPending else { return [] }
        readPending = false
        guard case .connected = state else { return [] }
        if batch.isEmpty {
            // Everything appended before this read is acknowledged (no window is in flight): every flush is done.
            var actions = flushes.takeAll().map { Action.completeFlush(id: $0, error: nil) }
            if let deadline = shutdownDeadline {
                state = .closing(deadline: deadline)
                actions.append(.reportActivity("closing the connection to \(configuration.endpoint)"))
                actions.append(.close(graceful: true))
            }
            return actions
        }
        inFlight = Window(
            batch: batch,
            acknowledgedEnd: batch.start,
            ackDeadline: clock.now.advanced(by: configuration.ackTimeout)
        )
        return [.write(batch), .scheduleTimer(at: timerDeadline())]
    }

    /// The window in flight is written (in our kernel's send buffer); it waits for its ACK.
    package mutating func writeCompleted(bufferBound: Int? = nil) -> [Action] {
        guard case .connected = state, var window = inFlight, !window.written else { return [] }
        window.written = true
        inFlight = window
        let batch = window.batch
        counters.sentRecords += UInt64(batch.recordCount)
        counters.sentBytes += UInt64(batch.bytes.count)
        if batch.start < highestSent {
            counters.resentRecords += UInt64(batch.recordCount)
        }
        highestSent = max(highestSent, batch.end)
        return [
            .reportActivity(
                "sent a window of \(batch.recordCount) event\(batch.recordCount == 1 ? "" : "s") (\(batch.bytes.count) bytes) to \(configuration.endpoint)"
            )
        ]
    }

    /// The collector sent `2A sequence`.
    package mutating func ackReceived(sequence: UInt32) -> [Action] {
        guard case .connected = state else { return [] }
        guard var window = inFlight else {
            // Nothing in flight: a late keep-alive repeating the last ACK.
            return []
        }
        let count = window.batch.recordCount
        guard Int(sequence) <= count else {
            return abort(
                LogstashError(
                    code: .malformedFrame,
                    message:
                        "\(configuration.endpoint) acknowledged event \(sequence) of a window of \(count): not a Beats server, or a broken one"
                )
            )
        }
        window.ackDeadline = clock.now.advanced(by: configuration.ackTimeout)
        inFlight = window
        guard Int(sequence) > window.acknowledged else {
            // A keep-alive: the collector is still working on the window.
            return [.scheduleTimer(at: timerDeadline())]
        }
        progressSinceConnect = true
        unresolvedError = nil
        if Int(sequence) == count {
            // The whole window is in the collector's queue.
            counters.acknowledgedRecords += UInt64(count - window.acknowledged)
            inFlight = nil
            acknowledgedPosition = max(acknowledgedPosition, window.batch.end)
            let full = count >= windowSize || window.batch.bytes.count + 1024 >= configuration.maxBatchBytes
            if count >= windowSize {
                let grown = min(configuration.maxWindow, windowSize + (windowSize + 1) / 2)
                windowSize = max(windowSize, grown)
            }
            var actions: [Action] = [.acknowledge(upTo: window.batch.end)]
            actions += flushes.takeDone(upTo: acknowledgedPosition).map { .completeFlush(id: $0, error: nil) }
            // The timer before the read (see ``connected()``).
            actions.append(.scheduleTimer(at: timerDeadline()))
            if full || !flushes.isEmpty || shutdownDeadline != nil {
                actions += readIfIdle()
            }
            return actions
        }
        // A partial ACK: the spool may forget the records it covers.
        let newly = Int(sequence) - window.acknowledged
        counters.acknowledgedRecords += UInt64(newly)
        window.acknowledged = Int(sequence)
        window.applying = true
        inFlight = window
        return [.acknowledgeRecords(from: window.acknowledgedEnd, count: newly), .scheduleTimer(at: timerDeadline())]
    }

    /// The transport applied a ``DeliveryAction/acknowledgeRecords(from:count:)``: the records before
    /// `position` are forgotten.
    package mutating func recordsAcknowledged(upTo position: SpoolPosition) -> [Action] {
        acknowledgedPosition = max(acknowledgedPosition, position)
        guard var window = inFlight, window.applying else { return [] }
        window.applying = false
        window.acknowledgedEnd = position
        inFlight = window
        return flushes.takeDone(upTo: acknowledgedPosition).map { .completeFlush(id: $0, error: nil) }
    }

    /// The connection closed: `error` is `nil` for a clean end of stream.
    package mutating func connectionClosed(error: LogstashError?, peerClosedAfterUs: Bool = true) -> [Action] {
        switch state {
        case .closing:
            // We close only once nothing is waiting for an ACK: whatever way it ends, nothing is unconfirmed.
            return finishShutdown(error: nil)
        case .connected:
            return lose(error ?? LogstashError(code: .connectionLost, message: "the collector closed the connection"))
        case .connecting:
            return connectFailed(
                error ?? LogstashError(code: .connectFailed, message: "the connection closed while connecting")
            )
        case .idle, .backingOff, .closed:
            return []
        }
    }

    /// The timer scheduled last fired (stale timers are harmless: deadlines are checked).
    package mutating func timerFired() -> [Action] {
        let now = clock.now
        switch state {
        case .backingOff(let until, let failures):
            guard now >= until else { return [.scheduleTimer(at: until)] }
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
                            message: "shutdown timed out before everything was acknowledged; the rest stays spooled"
                        )
                    )
            }
            if let window = inFlight, now >= window.ackDeadline {
                return abort(
                    LogstashError(
                        code: .timeout,
                        message:
                            "\(configuration.endpoint) acknowledged nothing for \(seconds(configuration.ackTimeout)) (\(window.acknowledged) of \(window.batch.recordCount) events of the window)"
                    )
                )
            }
            var read: [Action] = []
            if let next = nextDispatch, now >= next {
                nextDispatch = now.advanced(by: configuration.sendInterval)
                read = readIfIdle()
            }
            // The timer before the read (see ``connected()``).
            return [.scheduleTimer(at: timerDeadline())] + read
        case .closing(let deadline):
            guard now >= deadline else { return [.scheduleTimer(at: deadline)] }
            return [.close(graceful: false)] + finishShutdown(error: nil)
        case .connecting:
            guard let deadline = shutdownDeadline else { return [] }
            guard now >= deadline else { return [.scheduleTimer(at: deadline)] }
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

    /// Asks to be told (``DeliveryAction/completeFlush(id:error:)``) once every record before `upTo` — the
    /// spool's end when the flush was requested — has been acknowledged, or why it can't be.
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
            flushes.add(id: id, upTo: upTo)
            return readIfIdle()
        case .connecting, .closing:
            flushes.add(id: id, upTo: upTo)
            return []
        case .backingOff(_, let failures):
            // Try now rather than make the caller wait for the backoff — once an outage: after that, at the backoff's
            // pace (its timer is set).
            flushes.add(id: id, upTo: upTo)
            guard !flushCutTheBackoffShort else { return [] }
            flushCutTheBackoffShort = true
            state = .connecting(since: clock.now, failures: failures)
            return [.reportActivity("connecting to \(configuration.endpoint) (flush requested)"), .connect]
        }
    }

    /// Flush `id`'s caller stopped waiting (its timeout): it is forgotten, not completed.
    package mutating func flushAbandoned(id: Int) {
        flushes.remove(id: id)
    }

    /// Flushes waiting for records to be delivered.
    package var pendingFlushCount: Int { flushes.count }

    /// Sends what is queued and waits for its ACKs (within ``Configuration/shutdownTimeout``), closes, and
    /// reports ``DeliveryAction/shutdownComplete``. What isn't acknowledged stays in the spool.
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
                return [.scheduleTimer(at: deadline)]
            case .end(let error):
                // Nothing queued (no error): every flush waiting has what it asked for.
                let done = error == nil ? flushes.takeAll().map { Action.completeFlush(id: $0, error: nil) } : []
                return [.close(graceful: false)] + done + finishShutdown(error: error)
            }
        case .connected:
            guard shutdownDeadline == nil else { return [] }
            shutdownDeadline = deadline
            // The timer before the read (see ``connected()``).
            let dispatch = Action.scheduleTimer(at: timerDeadline())
            return [dispatch] + readIfIdle()
        case .closing, .closed:
            return []
        }
    }

    // MARK: - Helpers

    /// Drops the connection now (a protocol error, an ACK timeout) and goes on as after a lost connection.
    private mutating func abort(_ reason: LogstashError) -> [Action] {
        [.close(graceful: false)] + lose(reason)
    }

    /// The connection is gone: the window shrinks, and the records not acknowledged are resent after the backoff.
    private mutating func lose(_ reason: LogstashError) -> [Action] {
        guard case .connected(let since, let failuresBefore) = state else { return [] }
        counters.connectionErrors += 1
        unresolvedError = reason.description
        let unconfirmed = inFlight.map { $0.batch.recordCount - $0.acknowledged } ?? 0
        inFlight = nil
        readPending = false
        windowSize = max(1, windowSize / 2)
        if shutdownDeadline != nil {
            return finishShutdown(error: reason)
        }
        let productive = progressSinceConnect || since.duration(to: clock.now) >= configuration.healthyConnectionTime
        let failures = productive ? 0 : failuresBefore
        if productive { flushCutTheBackoffShort = false }
        let delay = configuration.backoff.delay(failures: failures, random: random())
        let until = clock.now.advanced(by: delay)
        state = .backingOff(until: until, failures: failures + 1)
        let resend =
            unconfirmed > 0 ? "; \(unconfirmed) unacknowledged event\(unconfirmed == 1 ? "" : "s") will be resent" : ""
        var actions: [Action] = [
            .reportActivity(
                "connection to \(configuration.endpoint) lost: \(reason)\(resend); window \(windowSize); reconnecting in \(seconds(delay))"
            )
        ]
        actions += failFlushes(
            LogstashError(
                code: .connectionLost,
                message:
                    "not delivered: the connection to \(configuration.endpoint) was lost; records stay spooled and will be resent in \(seconds(delay))",
                cause: reason.description
            )
        )
        actions.append(.scheduleTimer(at: until))
        return actions
    }

    private mutating func readIfIdle() -> [Action] {
        guard case .connected = state, inFlight == nil, !readPending else { return [] }
        readPending = true
        // Reading from the last acknowledged position: the spool clamps it to its cursor if older.
        return [.readBatch(from: acknowledgedPosition, maxBytes: configuration.maxBatchBytes, maxRecords: windowSize)]
    }

    private func timerDeadline() -> C.Instant {
        var deadline = nextDispatch ?? clock.now.advanced(by: configuration.sendInterval)
        if let window = inFlight { deadline = min(deadline, window.ackDeadline) }
        if let shutdown = shutdownDeadline { deadline = min(deadline, shutdown) }
        return deadline
    }

    private mutating func failFlushes(_ error: LogstashError) -> [Action] {
        flushes.takeAll().map { .completeFlush(id: $0, error: error) }
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
