import Foundation
import Testing

/// Whether the real collectors can run here, and whether tests must insist on them.
public enum Collectors {
    /// `JUSTLOG_REQUIRE_COLLECTORS=1`: a missing collector is a test failure, not a skip.
    public static var required: Bool {
        ProcessInfo.processInfo.environment["JUSTLOG_REQUIRE_COLLECTORS"] == "1"
    }

    /// `true` if `python3 -c "import pylogbeat"` works (`pip install pylogbeat`): an independent Beats client.
    public static let pylogbeatAvailable: Bool = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import pylogbeat"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    /// `true` if syslog-ng and openssl are installed.
    public static var syslogNGAvailable: Bool {
        SyslogNG.executable != nil && TestCertificates.opensslPath != nil
    }
}

extension Collectors {
    /// For a test enabled by `.enabled(if: Collectors.pylogbeatAvailable || Collectors.required)`: records a
    /// failure and returns `false` when collectors are required but pylogbeat is missing.
    public static func requirePylogbeat() -> Bool {
        if !pylogbeatAvailable {
            Issue.record("JUSTLOG_REQUIRE_COLLECTORS=1 but pylogbeat is not installed (pip install pylogbeat)")
            return false
        }
        return true
    }

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
