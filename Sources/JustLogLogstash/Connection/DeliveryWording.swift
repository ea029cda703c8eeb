/// What both delivery state machines (``ConnectionStateMachine``, ``BeatsStateMachine``) say the same way.
enum DeliveryWording {
    /// A duration as activity lines and errors give it: "41 ms" below a second, else "2.5 s".
    static func seconds(_ duration: Duration) -> String {
        let total = duration.totalSeconds
        if total < 1 { return "\(Int((total * 1000).rounded())) ms" }
        return "\((total * 10).rounded() / 10) s"
    }

    /// The last activity line of a shutdown: it closed a connection, or there was none to close (it stopped while
    /// connecting or waiting to reconnect).
    static func stopped(hadConnection: Bool, to endpoint: String) -> String {
        hadConnection ? "closed the connection to \(endpoint)" : "stopped, not connected (last tried \(endpoint))"
    }

    /// A shutdown that waited for a connection to `endpoint` for its whole `timeout`.
    static func stillConnectingAtShutdown(to endpoint: String, after timeout: Duration) -> LogstashError {
        LogstashError(
            code: .timeout,
            message: "shut down while still connecting to \(endpoint) after \(seconds(timeout)); records stay spooled"
        )
    }
}
