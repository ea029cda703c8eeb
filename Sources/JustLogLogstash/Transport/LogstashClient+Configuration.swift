extension LogstashClient {
    /// Where and how to send. Settings are values; required ones are in `init`.
    ///
    /// ```swift
    /// var configuration = LogstashClient.Configuration(host: "listener.logz.io", port: 5052)
    /// configuration.sendInterval = .seconds(5)      // logger.logstashTimeout
    /// configuration.caFile = "/etc/ssl/private-ca.pem"
    /// ```
    public struct Configuration: Sendable {
        /// The collector's host name or IP address.
        public var host: String
        /// The collector's TCP port.
        public var port: Int
        /// TLS (default `true`). `false` sends plain TCP: an explicit choice, never a fallback.
        public var useTLS: Bool = true
        /// Accept any server certificate (default `false`). TLS stays on, without verification, and a
        /// warning is printed once. Never turns TLS off.
        public var allowUntrustedServer: Bool = false
        /// A PEM bundle of CA certificates to trust instead of the system roots (default `nil`: system roots).
        public var caFile: String?
        /// Base64 SHA-256 digests of accepted server SubjectPublicKeyInfos (default empty: no pinning).
        /// Checked on the leaf certificate after normal verification succeeded.
        public var pinnedSPKISHA256: [String] = []
        /// Time between batched dispatches, the documented `logstashTimeout` (default 5 s).
        public var sendInterval: Duration = .seconds(5)
        /// Longest time to resolve, connect and finish the TLS handshake (default 10 s).
        public var connectTimeout: Duration = .seconds(10)
        /// Most bytes per batch (default 1 MiB).
        public var maxBatchBytes: Int = 1 << 20
        /// Most records per batch (default 1000).
        public var maxBatchRecords: Int = 1000
        /// The longest line (record without its `\n`) the collector accepts (default 1 MiB). The spool
        /// enforces it: see ``LogstashSpool/Configuration/maxRecordBytes``; keep the two equal.
        public var maxLineBytes: Int = 1 << 20
        /// Bytes written after a record before the spool may forget it (default 16 MiB); see
        /// ``ConnectionStateMachine`` for why this proves delivery.
        public var resendWindowBytes: Int = 16 << 20
        /// First reconnect delay (default 0.5 s).
        public var backoffMinimum: Duration = .milliseconds(500)
        /// Longest reconnect delay (default 30 s).
        public var backoffMaximum: Duration = .seconds(30)
        /// Longest time a graceful shutdown may take to send what is queued and close (default 5 s).
        public var shutdownTimeout: Duration = .seconds(5)

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// How activity lines name the collector: never includes a token.
        var endpoint: String {
            let name = host.contains(":") ? "[\(host)]" : host
            return "\(name):\(port)" + (useTLS ? (allowUntrustedServer ? " (TLS, unverified)" : " (TLS)") : " (plain TCP)")
        }
    }

    /// A snapshot of the client's and its spool's counters.
    public struct Counters: Sendable, Hashable {
        /// Records in the spool not yet acknowledged.
        public var queued: Int
        /// Their size on the wire.
        public var spooledBytes: Int
        /// Records written to connections (resends included).
        public var sent: UInt64
        /// Records written again after a connection was lost.
        public var resent: UInt64
        /// Records dropped because the spool was full.
        public var dropped: UInt64
        /// Connections established.
        public var connects: UInt64
        /// Failed connection attempts and lost connections.
        public var connectionErrors: UInt64
        /// The last connection error since delivery last made proven progress, or `nil`: why records may still
        /// be unconfirmed (for example "the collector answered in TLS: it expects TLS on this port").
        public var lastConnectionError: String? = nil
    }
}
