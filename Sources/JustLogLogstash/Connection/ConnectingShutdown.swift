/// What both delivery machines do with a shutdown asked for while a connection is being made: wait for it until
/// `timeout` after the attempt began (a flush just before may have waited for the same attempt), or end at once —
/// cleanly with nothing queued, or saying so once that deadline has passed.
enum ConnectingShutdown<Instant: InstantProtocol> where Instant.Duration == Duration {
    /// Wait for the connection until this deadline, then send what is queued.
    case wait(until: Instant)
    /// End the shutdown now, with this error (`nil`: nothing was queued).
    case end(LogstashError?)

    init(attemptSince since: Instant, now: Instant, timeout: Duration, nothingToSend: Bool, endpoint: String) {
        let deadline = since.advanced(by: timeout)
        if nothingToSend {
            self = .end(nil)
        } else if now < deadline {
            self = .wait(until: deadline)
        } else {
            self = .end(DeliveryWording.stillConnectingAtShutdown(to: endpoint, after: timeout))
        }
    }
}
