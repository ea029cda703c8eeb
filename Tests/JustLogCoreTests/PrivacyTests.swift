import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

/// `Sensitive` values: replaced on the caller's thread as the logger's `PrivacyPolicy` says.
@Suite struct PrivacyTests {
    func capture(_ userInfo: [String: Any], privacy: PrivacyPolicy) -> [String: LogValue] {
        var capture = ValueCapture(privacy: privacy)
        return capture.fields(userInfo)
    }

    @Test func aRedactedValueBecomesTheMarkerWhateverItsType() {
        let fields = capture(
            ["email": Sensitive("ann@example.com"), "ids": Sensitive([1, 2, 3]), "plan": "gold"],
            privacy: .redacted
        )
        #expect(fields["email"] == .string("<private>"))
        #expect(fields["ids"] == .string("<private>"))
        #expect(fields["plan"] == .string("gold"))
    }

    @Test func aHashedValueIsTheSameForTheSameValueAndKeyAndHidesTheValue() {
        let key = Array("k3y".utf8)
        let first = capture(["email": Sensitive("ann@example.com")], privacy: .hashed(key: key))["email"]
        let again = capture(["email": Sensitive("ann@example.com")], privacy: .hashed(key: key))["email"]
        let other = capture(["email": Sensitive("bob@example.com")], privacy: .hashed(key: key))["email"]
        let otherKey = capture(["email": Sensitive("ann@example.com")], privacy: .hashed(key: Array("other".utf8)))[
            "email"
        ]
        guard case .string(let text)? = first else {
            Issue.record("not a string: \(String(describing: first))")
            return
        }
        #expect(text.hasPrefix("<private:") && text.count == "<private:".count + 16 + 1, "\(text)")
        #expect(!text.contains("ann"))
        #expect(first == again)
        #expect(first != other)
        #expect(first != otherKey)
    }

    @Test func hmacMatchesRFC4231TestCase2() {
        // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?".
        let digest = SHA256.hmac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        let hex = digest.map { String(format: "%02x", $0) }.joined()
        #expect(hex == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func aRevealedValueIsCapturedAsIfUnmarked() {
        let fields = capture(["email": Sensitive("ann@example.com"), "n": Sensitive(42)], privacy: .revealed)
        #expect(fields["email"] == .string("ann@example.com"))
        #expect(fields["n"] == .int(42))
    }

    @Test func theDefaultRedactsInReleaseBuildsOnly() {
        #if DEBUG
        #expect(PrivacyPolicy.default == .revealed)
        #else
        #expect(PrivacyPolicy.default == .redacted)
        #endif
    }

    @Test func aLoggerRedactsBeforeAnyDestinationSeesTheValue() async throws {
        let inline = CapturingDestination(delivery: .inline)
        let background = CapturingDestination()
        let logger = StructuredLogger(
            configuration: .init(
                destinations: [.init(inline), .init(background)],
                runtime: Fixtures.runtime,
                privacy: .redacted
            )
        )
        logger.info(
            "signed in",
            userInfo: ["email": Sensitive("ann@example.com"), "nested": ["card": Sensitive("4111 1111")]]
        )
        try await logger.flush()
        for destination in [inline, background] {
            let record = try #require(destination.records.first)
            let text = String(decoding: AggregatedFormat.encode(record), as: UTF8.self)
            #expect(!text.contains("ann@example.com") && !text.contains("4111"), "\(text)")
            #expect(record.userInfo["email"] == .string("<private>"))
        }
        await logger.pipeline.shutdown()
    }
}
