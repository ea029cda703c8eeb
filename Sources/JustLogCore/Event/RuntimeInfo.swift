import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The running program, as the aggregated form's metadata reports it: `app_version`, `version` (the
/// operating system's) and `device` (the machine's architecture or model).
///
/// ```swift
/// let info = RuntimeInfo(appVersion: "1.0 (1)", osVersion: "10.1", device: "x86_64")
/// ```
public struct RuntimeInfo: Hashable, Sendable {
    public var appVersion: String
    public var osVersion: String
    public var device: String

    public init(appVersion: String, osVersion: String, device: String) {
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.device = device
    }

    /// What this process can find out about itself: the main bundle's `CFBundleShortVersionString (CFBundleVersion)`
    /// where there is one (else `unknown`), the OS version (`6.1.0` on Linux, the kernel's), and `uname`'s
    /// machine (`x86_64`, `aarch64`, or a model such as `iPhone14,2`).
    public static let current: RuntimeInfo = {
        let info = Bundle.main.infoDictionary ?? [:]
        let short = info["CFBundleShortVersionString"] as? String
        let build = info["CFBundleVersion"] as? String
        let appVersion: String
        switch (short, build) {
        case let (short?, build?): appVersion = "\(short) (\(build))"
        case let (short?, nil): appVersion = short
        case let (nil, build?): appVersion = build
        default: appVersion = "unknown"
        }
        let os = ProcessInfo.processInfo.operatingSystemVersion
        return RuntimeInfo(
            appVersion: appVersion,
            osVersion: "\(os.majorVersion).\(os.minorVersion).\(os.patchVersion)",
            device: machineName()
        )
    }()

    private static func machineName() -> String {
        var name = utsname()
        guard uname(&name) == 0 else { return "unknown" }
        return withUnsafeBytes(of: &name.machine) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
