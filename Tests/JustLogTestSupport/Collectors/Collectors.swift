import Foundation
import Testing

/// Whether the real collectors can run here, and whether tests must insist on them.
public enum Collectors {
    /// `JUSTLOG_REQUIRE_COLLECTORS=1`: a missing collector is a test failure, not a skip.
    public static var required: Bool {
        ProcessInfo.processInfo.environment["JUSTLOG_REQUIRE_COLLECTORS"] == "1"
    }

    /// `true` if syslog-ng and openssl are installed.
    public static var syslogNGAvailable: Bool {
        SyslogNG.executable != nil && TestCertificates.opensslPath != nil
    }
}

extension Collectors {
    /// For a test enabled by `.enabled(if: Collectors.syslogNGAvailable || Collectors.required)`: records a
    /// failure and returns `false` when collectors are required but missing.
    public static func requireSyslogNG() -> Bool {
        if !syslogNGAvailable {
            Issue.record("JUSTLOG_REQUIRE_COLLECTORS=1 but syslog-ng (/usr/sbin/syslog-ng) or openssl is not installed")
            return false
        }
        return true
    }
}
