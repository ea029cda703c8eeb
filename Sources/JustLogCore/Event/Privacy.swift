/// A `userInfo` value that must not reach any destination in clear: a user's e-mail address, a token, an
/// account number. What is written instead is the logger's ``PrivacyPolicy``'s choice — by default
/// `"<private>"` in release builds.
///
/// ```swift
/// logger.info("signed in", userInfo: ["email": Sensitive(user.email), "plan": "gold"])
/// // release build, file: "userInfo":{"email":"<private>","log_type":"info","plan":"gold"}
/// ```
///
/// The value is redacted on the caller's thread, as it is captured: the clear value never waits in a queue,
/// a spool or a journal. swift-log metadata marked `Sensitivity.sensitive` (JustLogLogging) is treated the same.
public struct Sensitive: Sendable {
    /// The value, for the policy to reveal, hash or hide.
    public let value: any Sendable

    public init(_ value: any Sendable) {
        self.value = value
    }
}

/// How values marked private (``Sensitive`` in `userInfo`, `Sensitivity.sensitive` in swift-log metadata) are
/// written. Applied on the caller's thread before any destination, queue or spool sees the value.
public struct PrivacyPolicy: Sendable, Hashable, CustomStringConvertible {
    enum Mode: Hashable, Sendable {
        case redact
        case hash(key: [UInt8])
        case reveal
    }

    let mode: Mode

    /// Writes `"<private>"`.
    public static let redacted = PrivacyPolicy(mode: .redact)

    /// Writes `"<private:` + the first 16 hex digits of HMAC-SHA-256(`key`, the value's JSON) + `">"`: the same value
    /// gives the same text under the same key, so events about one user can be correlated in Kibana without
    /// showing who it is. Keep the key secret and stable (a random key per run still hides the value, but the
    /// same value then looks different in each run); without a key, a short value could be found by trying
    /// every candidate.
    public static func hashed(key: [UInt8]) -> PrivacyPolicy {
        PrivacyPolicy(mode: .hash(key: key))
    }

    /// Writes the value in clear: for development only.
    public static let revealed = PrivacyPolicy(mode: .reveal)

    /// ``redacted`` in release builds, ``revealed`` in debug builds (as Apple's unified logging shows private
    /// values while developing).
    public static var `default`: PrivacyPolicy {
        #if DEBUG
        .revealed
        #else
        .redacted
        #endif
    }

    public var description: String {
        switch mode {
        case .redact: "redacted"
        case .hash: "hashed"
        case .reveal: "revealed"
        }
    }

    /// What is written for a private `value`.
    public func apply(to value: LogValue) -> LogValue {
        switch mode {
        case .redact:
            return .string(Self.redactionMarker)
        case .reveal:
            return value
        case .hash(let key):
            var json: [UInt8] = []
            JSONWriter.write(value, into: &json)
            let digest = SHA256.hmac(key: key, message: json)
            let hex = digest.prefix(8).map { byte in
                let digits = Array("0123456789abcdef".utf8)
                return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xf)]], as: UTF8.self)
            }.joined()
            return .string("<private:\(hex)>")
        }
    }

    /// What ``redacted`` writes.
    public static let redactionMarker = "<private>"
}
