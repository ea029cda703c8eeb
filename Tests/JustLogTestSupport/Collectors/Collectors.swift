import Foundation

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
