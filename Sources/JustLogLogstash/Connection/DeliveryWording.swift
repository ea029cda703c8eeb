/// What both delivery state machines (``ConnectionStateMachine``, ``BeatsStateMachine``) say the same way.
enum DeliveryWording {
    /// A duration as activity lines and errors give it: "41 ms" below a second, else "2.5 s".
    static func seconds(_ duration: Duration) -> String {
        let total = duration.totalSeconds
        if total < 1 { return "\(Int((total * 1000).rounded())) ms" }
        return "\((total * 10).rounded() / 10) s"
    }

    /// The last activity line of a shutdown: it closed a connection, or there was none to close (it stopped while
    /// connecting or waiting to reconnect; no host is named: after a failover, the machine's endpoint is the next
    /// host, not one that was tried).
    static func stopped(hadConnection: Bool, to endpoint: String) -> String {
        hadConnection ? "closed the connection to \(endpoint)" : "stopped, not connected"
    }

    /// What the flushes waiting for a connection are told when the connect to `endpoint` failed and the client backs
    /// off for `delay`: after `hostsTried` hosts of a round all failed, that none could be reached.
    static func connectFailedFlushError(
        _ error: LogstashError,
        endpoint: String,
        hostsTried: Int,
        retryIn delay: Duration
    ) -> LogstashError {
        let what =
            hostsTried > 1
            ? "none of the \(hostsTried) hosts could be connected to (the last: \(endpoint))"
            : "connect to \(endpoint) failed"
        return LogstashError(
            code: error.code,
            message: "not delivered: \(what); records stay spooled and will be retried in \(seconds(delay))",
            cause: error.description
        )
    }

    /// A shutdown that waited for a connection to `endpoint` for its whole `timeout`.
    static func stillConnectingAtShutdown(to endpoint: String, after timeout: Duration) -> LogstashError {
        LogstashError(
            code: .timeout,
            message: "shut down while still connecting to \(endpoint) after \(seconds(timeout)); records stay spooled"
        )
    }
}
