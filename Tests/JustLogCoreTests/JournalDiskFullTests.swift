import Foundation
import JustLogTestKit
import JustLogTestSupport
import Testing

@testable import JustLogCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The journal on a real full disk: a tmpfs with room for one segment. Mounting one needs root; as any other user
/// these tests are skipped.
@Suite struct JournalDiskFullTests {
    static let isRoot = getuid() == 0

    /// Review (helper-40 #5): on a full disk every log call tried to start a segment twice (the fast lane, then the
    /// full path) — an `open`, a `posix_fallocate` and an `unlink` each: 3,680 tries here for the ~1,700 calls
    /// after the first segment filled, each call several times its cost. Now one try, then none for the journal's
    /// retry interval; the events still reach the destination, and once space returns and the interval has passed,
    /// the journal takes them again.
    @Test(.enabled(if: isRoot, "mounting a tmpfs needs root"))
    func aFullDiskCostsTheJournalOneTryPerRetryIntervalNotTwoPerCall() async throws {
        let folder = try TemporaryDirectory(prefix: "journal-disk-full")
        let disk = try TmpfsMount(at: folder.file("disk"), size: "100k")
        defer { disk.unmount() }
        let clock = ManualInstant()
        let tries = LockedValue(0)
        var configuration = EventJournal.Configuration(
            directory: disk.path + "/app.log.journal",
            segmentBytes: 64 << 10,
            maxTotalBytes: 1 << 20
        )
        configuration.now = { clock.now }
        configuration.onStartingASegment = { tries.withLock { $0 += 1 } }
        let diagnostics = LineCapture()
        let journal = try EventJournal(configuration: configuration, diagnostics: diagnostics.diagnostics)
        let capture = CapturingDestination()
        let logger = StructuredLogger(
            configuration: .init(destinations: [.init(capture)], diagnostics: diagnostics.diagnostics, journal: journal)
        )
        let padding = String(repeating: "x", count: 200)
        // The one 64 KiB segment holds a few hundred of these; the rest find no room for a second.
        for index in 0..<2_000 { logger.info("event \(index) \(padding)") }
        #expect(tries.current == 1, "one try at a second segment while the clock stands still")
        // Meanwhile no record that needs a segment is worth waiting for (review, helper-43 #3: it said `available`,
        // and a destination could hold the pipeline back, callers waiting for a journal that refuses them).
        #expect(journal.roomBelowHalf(for: journal.maximumRecordBytes) == .never)
        clock.advance(by: .milliseconds(999))
        for index in 2_000..<2_100 { logger.info("event \(index) \(padding)") }
        #expect(tries.current == 1, "none within the retry interval")
        clock.advance(by: .milliseconds(1))
        for index in 2_100..<2_200 { logger.info("event \(index) \(padding)") }
        #expect(tries.current == 2, "one more once it has passed (the disk is still full)")

        // Space returns: after the interval, the journal starts its second segment and takes events again.
        try disk.resize(to: "1m")
        clock.advance(by: .seconds(1))
        #expect(journal.roomBelowHalf(for: journal.maximumRecordBytes) == .available, "the retry is due")
        for index in 2_200..<2_250 { logger.info("event \(index) \(padding)") }
        #expect(tries.current == 3)
        // Had it failed, a second later the next call would try again.
        clock.advance(by: .seconds(1))
        // (100 records in all, of about 416 bytes in their frames: a 64 KiB segment takes about 157.)
        for index in 2_250..<2_300 { logger.info("event \(index) \(padding)") }
        #expect(tries.current == 3, "the second segment started, and takes the events: none to start")

        #expect(await logger.pipeline.shutdown(timeout: 30) == nil)
        #expect(capture.messages == (0..<2_300).map { "event \($0) \(padding)" }, "every event reached the destination")
        #expect(diagnostics.text.contains("can't journal an event"), "\(diagnostics.writes)")
    }
}

/// A clock for ``EventJournal/Configuration/now`` that moves only when told.
private final class ManualInstant: Sendable {
    private let current = LockedValue(ContinuousClock.now)
    var now: ContinuousClock.Instant { current.current }
    func advance(by duration: Duration) { current.withLock { $0 = $0.advanced(by: duration) } }
}
