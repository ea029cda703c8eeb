extension LogstashClient {
    /// Where and how to send. Settings are values; required ones are in `init`.
    ///
    /// ```swift
    /// var configuration = LogstashClient.Configuration(host: "listener.logz.io", port: 5052)
    /// configuration.sendInterval = .seconds(5)      // logger.logstashTimeout
    /// configuration.caFile = "/etc/ssl/private-ca.pem"
    ///
    /// // Logstash's beats input, acknowledged delivery, with a second collector to fail over to:
    /// var beats = LogstashClient.Configuration(hosts: [.init(host: "logstash-a", port: 5044), .init(host: "logstash-b", port: 5044)])
    /// beats.transport = .beats
    /// ```
    public struct Configuration: Sendable {
        /// The collectors, tried in order: the client sends to one at a time and moves to the next when a
        /// connect fails or a connection is lost (failover). Never empty.
        public var hosts: [Host] {
            didSet { if hosts.isEmpty { hosts = oldValue } }
        }
        /// The first collector's host name or IP address (``hosts``' first element).
        public var host: String {
            get { hosts[0].host }
            set { hosts[0].host = newValue }
        }
        /// The first collector's TCP port (``hosts``' first element).
        public var port: Int {
            get { hosts[0].port }
            set { hosts[0].port = newValue }
        }
        /// The protocol spoken to the collector (default ``Transport/jsonLines``; ``Transport/beats`` for
        /// acknowledged delivery to Logstash's `beats` input).
        public var transport: Transport = .jsonLines
        /// Beats with several ``hosts``: keep a connection to every host at once and share the records out
        /// among them, each connection with its own window and acknowledgements (default `false`: one host at
        /// a time, failing over). A host that fails gets nothing until it is back; its unacknowledged window
        /// goes to another. Ignored with json_lines, whose collectors acknowledge nothing to share by.
        public var loadBalance: Bool = false
        /// TLS (default `true`). `false` sends plain TCP: an explicit choice, never a fallback.
        public var useTLS: Bool = true
        /// Accept any server certificate (default `false`). TLS stays on, without verification, and a
        /// warning is printed once. Never turns TLS off.
        public var allowUntrustedServer: Bool = false
        /// A PEM bundle of CA certificates to trust instead of the system roots (default `nil`: system roots).
        public var caFile: String?
        /// Base64 SHA-256 digests of accepted server SubjectPublicKeyInfos (default empty: no pinning).
        /// Checked on the leaf certificate after normal verification succeeded — or, with
        /// ``allowUntrustedServer``, instead of it (a self-signed collector trusted by its key alone).
        public var pinnedSPKISHA256: [String] = []
        /// Time between batched dispatches, the documented `logstashTimeout` (default 5 s).
        public var sendInterval: Duration = .seconds(5)
        /// Longest time to resolve, connect and finish the TLS handshake (default 10 s).
        public var connectTimeout: Duration = .seconds(10)
        /// Most bytes per batch or Beats window (default 1 MiB).
        public var maxBatchBytes: Int = 1 << 20
        /// Most records per batch (default 1000; json_lines — Beats windows follow ``Transport/Beats``).
        public var maxBatchRecords: Int = 1000
        /// The longest line (record without its `\n`) the collector accepts (default 1 MiB). The spool
        /// enforces it: see ``LogstashSpool/Configuration/maxRecordBytes``; a ``LogstashDestination`` takes the
        /// shorter of the two.
        public var maxLineBytes: Int = 1 << 20
        /// json_lines only: bytes written after a record before the spool may forget it (default 16 MiB); see
        /// ``ConnectionStateMachine`` for why this proves delivery. Beats forgets what the collector acknowledged.
        public var resendWindowBytes: Int = 16 << 20
        /// First reconnect delay (default 0.5 s). Every reconnect delay is at least 10 ms and at most a year,
        /// whatever this and ``backoffMaximum`` say: a collector that refuses at once is never retried in a busy loop.
        public var backoffMinimum: Duration = .milliseconds(500)
        /// Longest reconnect delay (default 30 s).
        public var backoffMaximum: Duration = .seconds(30)
        /// Longest time a graceful shutdown may take to send what is queued and close (default 5 s). While it waits
        /// for a connect and another of several ``hosts`` has not been tried, the attempt gets only its share of
        /// this time (when the connect timeout is longer), then the next host is tried.
        public var shutdownTimeout: Duration = .seconds(5)
        /// json_lines: a write the collector has not taken within this long (default 30 s) ends the connection
        /// — the collector stopped reading — and its records are sent again, to the next of several ``hosts``.
        /// A collector must take a batch (up to ``maxBatchBytes``) within it. (Beats: ``Transport/Beats/ackTimeout``.)
        public var writeTimeout: Duration = .seconds(30)

        public init(host: String, port: Int) {
            self.hosts = [Host(host: host, port: port)]
        }

        /// Several collectors, tried in order (see ``hosts``); an empty list is taken as `localhost:5000`.
        public init(hosts: [Host]) {
            self.hosts = hosts.isEmpty ? [Host(host: "localhost", port: 5000)] : hosts
        }

        /// The most ``maxBatchBytes`` and ``maxLineBytes`` may be: 1 GiB (a batch is one buffer).
        public static let maximumBatchBytes = 1 << 30
        /// The most ``resendWindowBytes`` may be: 1 TiB.
        public static let maximumResendWindowBytes = 1 << 40

        /// Throws ``LogstashError`` (``LogstashError/Code/invalidConfiguration``) for sizes that can't work: a batch,
        /// line or record count below 1, a batch or line past ``maximumBatchBytes``, a negative resend window or one
        /// past ``maximumResendWindowBytes`` (review, helper-48: such values trapped on the event loop, or sent
        /// nothing); a connect, write or ACK timeout under 1 ms, or past ``maximumTimeout``.
        public func validate() throws {
            func check(_ valid: Bool, _ message: @autoclosure () -> String) throws {
                if !valid { throw LogstashError(code: .invalidConfiguration, message: message()) }
            }
            try check(
                (1...Self.maximumBatchBytes).contains(maxBatchBytes),
                "maxBatchBytes (\(maxBatchBytes)) must be 1 to \(Self.maximumBatchBytes)"
            )
            try check(
                (1...Self.maximumBatchBytes).contains(maxLineBytes),
                "maxLineBytes (\(maxLineBytes)) must be 1 to \(Self.maximumBatchBytes)"
            )
            try check(maxBatchRecords >= 1, "maxBatchRecords (\(maxBatchRecords)) must be at least 1")
            try check(
                (0...Self.maximumResendWindowBytes).contains(resendWindowBytes),
                "resendWindowBytes (\(resendWindowBytes)) must be 0 to \(Self.maximumResendWindowBytes)"
            )
            // A timeout of nothing ends every connect, write or window before it can finish: nothing is ever
            // delivered, and the client retries forever (review, helper-53; under 1 ms the event loop's timer is
            // 0 ns, helper-54); past a year, a deadline overflows.
            var timeouts = [("connectTimeout", connectTimeout), ("writeTimeout", writeTimeout)]
            if let beats = transport.beatsSettings { timeouts.append(("ackTimeout", beats.ackTimeout)) }
            for (name, timeout) in timeouts {
                try check(
                    timeout >= .milliseconds(1) && timeout <= Self.maximumTimeout,
                    "\(name) (\(timeout)) must be at least 1 ms and at most a year"
                )
            }
        }

        /// The longest ``connectTimeout``, ``writeTimeout`` and ``Transport/Beats/ackTimeout`` may be: a year.
        public static let maximumTimeout = ReconnectBackoff.ceiling

        /// How activity lines name the first collector: never includes a token.
        var endpoint: String { endpoint(of: hosts[0]) }

        /// How activity lines name `host`: never includes a token.
        func endpoint(of host: Host) -> String {
            let name = host.host.contains(":") ? "[\(host.host)]" : host.host
            let unverified = pinnedSPKISHA256.isEmpty ? "TLS, unverified" : "TLS, pinned key only"
            let security = useTLS ? (allowUntrustedServer ? unverified : "TLS") : "plain TCP"
            return "\(name):\(host.port) (\(security)\(transport.isBeats ? ", Beats" : ""))"
        }
    }

    /// A collector's address.
    public struct Host: Sendable, Hashable {
        /// Host name or IP address.
        public var host: String
        /// TCP port.
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// The protocol spoken to the collector.
    ///
    /// - ``jsonLines``: one JSON object per line, for Logstash's `tcp` input with the `json_lines` codec
    ///   (and syslog-ng, rsyslog, logz.io). The collector says nothing back, so records are forgotten only
    ///   after a resend window of more bytes followed them (see ``ConnectionStateMachine``).
    /// - ``beats``: Lumberjack v2, for Logstash's `beats` input (and logz.io's Beats listener): windows of
    ///   numbered, compressed events that the collector acknowledges once they are in its queue; the spool
    ///   forgets exactly what was acknowledged (see ``BeatsStateMachine``).
    ///
    /// ```swift
    /// configuration.transport = .beats
    /// configuration.transport = .beats(.init(compressionLevel: 6, maxWindow: 4096))
    /// ```
    public struct Transport: Sendable, Hashable, CustomStringConvertible {
        /// Settings of the Beats transport.
        public struct Beats: Sendable, Hashable {
            /// zlib level of the compressed (`2C`) frames, 1 (fastest) … 9 (smallest); 0 sends uncompressed
            /// `2J` frames. Default 3.
            public var compressionLevel: Int
            /// Records in the first window; it grows by half after each fully acknowledged full window.
            /// Default 10 (Filebeat's).
            public var initialWindow: Int
            /// Most records in one window. Default 2048 (Filebeat's `bulk_max_size`).
            public var maxWindow: Int
            /// How long to wait for an ACK or keep-alive before resending the window on a new connection.
            /// Default 30 s (Filebeat's `timeout`).
            public var ackTimeout: Duration

            public init(
                compressionLevel: Int = 3,
                initialWindow: Int = 10,
                maxWindow: Int = 2048,
                ackTimeout: Duration = .seconds(30)
            ) {
                self.compressionLevel = min(max(compressionLevel, 0), 9)
                self.maxWindow = max(1, maxWindow)
                self.initialWindow = min(max(1, initialWindow), self.maxWindow)
                self.ackTimeout = ackTimeout
            }
        }

        enum Kind: Sendable, Hashable {
            case jsonLines
            case beats(Beats)
        }

        let kind: Kind

        /// `json_lines` over TCP or TLS (the default).
        public static let jsonLines = Transport(kind: .jsonLines)
        /// Lumberjack v2 (Beats) with the default settings.
        public static let beats = Transport(kind: .beats(Beats()))
        /// Lumberjack v2 (Beats) with these settings.
        public static func beats(_ settings: Beats) -> Transport { Transport(kind: .beats(settings)) }

        /// The Beats settings, or `nil` for json_lines.
        public var beatsSettings: Beats? {
            if case .beats(let settings) = kind { return settings }
            return nil
        }

        var isBeats: Bool { beatsSettings != nil }

        public var description: String {
            switch kind {
            case .jsonLines: "json_lines"
            case .beats(let settings):
                "beats (compression \(settings.compressionLevel), window \(settings.initialWindow)…\(settings.maxWindow))"
            }
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
        /// Records the collector acknowledged (Beats; always 0 with json_lines, whose collectors say nothing).
        public var acknowledged: UInt64 = 0
    }
}
