import JustLogCore
import JustLogTestKit
import Testing

/// The `JustLogTestKit` product, used as a user's own test would.
@Suite struct TestKitTests {
    @Test func aManualClockPinsTheTimestampsOfALoggersEvents() async throws {
        let capture = CapturingDestination()
        let clock = ManualClock(start: LogTimestamp(nanosecondsSinceEpoch: 1_700_000_000_000_000_000))
        let logger = StructuredLogger(configuration: .init(destinations: [.init(capture)], clock: clock.logClock))
        logger.info("first")
        clock.advance(by: .milliseconds(2500))
        logger.info("two and a half seconds later")
        try await logger.flush()
        #expect(capture.messages == ["first", "two and a half seconds later"])
        #expect(
            capture.records.map(\.timestamp.nanosecondsSinceEpoch) == [
                1_700_000_000_000_000_000, 1_700_000_002_500_000_000,
            ]
        )
        #expect(capture.records.first?.metadata["timestamp"] == "2023-11-14T22:13:20.000Z")
        await logger.pipeline.shutdown()
    }
}
