import Foundation
import JustLogTestSupport
import Testing

@testable import JustLogCore

/// `FastLaneGate`: what a plain log call reads without a lock before it encodes its record.
@Suite struct FastLaneGateTests {
    static func intake(_ index: Int, journal: EventJournal?, journalOnly: Bool = true) -> LogPipeline.Intake {
        var intake = LogPipeline.Intake(
            minimumLevel: LogLevel(rawValue: index % 5)!,
            captureLimits: .init(
                maximumDepth: index % (CaptureLimits.deepestNesting + 1),
                maximumKeys: index + 1,
                maximumElements: index + 2,
                maximumBytes: index + 3,
                maximumMessageBytes: index + 4
            )
        )
        intake.journal = journal
        intake.journalOnly = journalOnly
        intake.eventIDPrefix = UInt64(index) * 0x1_0000_0001
        return intake
    }

    /// Whether `lane` is exactly what `intake(index)` published, for some index.
    static func isPublished(_ lane: FastLaneGate.Lane) -> Bool {
        let index = lane.captureLimits.maximumKeys - 1
        let expected = intake(index, journal: nil)
        return lane.minimumLevel == expected.minimumLevel && lane.captureLimits == expected.captureLimits
            && lane.eventIDPrefix == expected.eventIDPrefix
    }

    @Test func anOpenLaneReadsBackWhatWasPublishedWithANewVersionEachTime() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let journal = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        defer { journal.close() }
        let gate = FastLaneGate()
        #expect(gate.current() == nil, "closed until an intake is published")

        let first = gate.publish(Self.intake(7, journal: journal))
        let lane = try #require(gate.current())
        #expect(lane.version == first)
        #expect(lane.minimumLevel == .info)
        #expect(
            lane.captureLimits
                == CaptureLimits(
                    maximumDepth: 7,
                    maximumKeys: 8,
                    maximumElements: 9,
                    maximumBytes: 10,
                    maximumMessageBytes: 11
                )
        )
        #expect(lane.eventIDPrefix == 7 * 0x1_0000_0001)

        let second = gate.publish(Self.intake(9, journal: journal))
        #expect(second != first, "a record encoded with the first is refused after the second")
        #expect(gate.current()?.version == second)
        #expect(gate.current()?.minimumLevel == .error)
    }

    @Test func theLaneClosesWhenADestinationIsWrittenInlineOrThereIsNoJournal() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let journal = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        defer { journal.close() }
        let gate = FastLaneGate()
        _ = gate.publish(Self.intake(1, journal: journal))
        #expect(gate.current() != nil)
        _ = gate.publish(Self.intake(1, journal: journal, journalOnly: false))
        #expect(gate.current() == nil, "an inline destination: every call takes the full path")
        _ = gate.publish(Self.intake(1, journal: journal))
        _ = gate.publish(Self.intake(1, journal: nil))
        #expect(gate.current() == nil, "no journal")
    }

    /// The limits are public `var`s: one set below zero after `init` is published (as the capture path takes it,
    /// nothing allowed), never a trap under the pipeline's lock.
    @Test func aLimitSetBelowZeroIsPublishedNotATrap() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let journal = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        defer { journal.close() }
        var intake = Self.intake(100, journal: journal)
        intake.captureLimits.maximumBytes = -1
        intake.captureLimits.maximumDepth = .min
        let gate = FastLaneGate()
        _ = gate.publish(intake)
        let lane = try #require(gate.current())
        #expect(lane.captureLimits.maximumBytes == 0)
        #expect(lane.captureLimits.maximumDepth == 0)
        #expect(lane.captureLimits.maximumKeys == 101)

        // And through a pipeline: set up, reconfigured, logged to.
        let capture = CapturingDestination()
        let logger = StructuredLogger(
            configuration: .init(
                destinations: [.init(capture)],
                captureLimits: intake.captureLimits,
                journal: journal
            )
        )
        logger.info("still logged")
        #expect(logger.pipeline.flush(timeout: 30) == nil)
        #expect(capture.records.map(\.message) == ["still logged"])
        logger.pipeline.shutdown()
    }

    /// Readers racing the writer never see a mix of two intakes: each lane they read is one that was published,
    /// whole, and its version only grows.
    @Test func readersRacingTheWriterSeeOnlyWholePublishedIntakes() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let journal = try EventJournal(configuration: .init(directory: folder.file("app.log.journal")))
        defer { journal.close() }
        let gate = FastLaneGate()
        _ = gate.publish(Self.intake(0, journal: journal))
        let writes = 20_000
        let writing = LockedValue(true)
        let finishedReaders = LockedValue(0)
        let torn = LockedValue(0)
        let reads = LockedValue(0)
        let backwards = LockedValue(0)
        let startedReaders = LockedValue(0)
        /// Versions a reader saw change while the writer wrote, all readers together: the race happened.
        let changes = LockedValue(0)
        /// The same, as the readers see them (the writer goes on until they did).
        let changesSoFar = LockedValue(0)
        let lastPublished = LockedValue(0)
        Thread.detachNewThread {
            // Once both readers read: on a loaded machine the writes could otherwise be over before either began.
            for _ in 0..<120_000 where startedReaders.current < 2 { usleep(1_000) }
            // And on past `writes` until the readers saw the versions change beyond their first read (a reader
            // descheduled all through the writes saw none: a CI run), at most two million.
            var index = 0
            while index < writes || (changesSoFar.current <= 2 && index < 2_000_000) {
                index += 1
                _ = gate.publish(Self.intake(index, journal: journal))
            }
            lastPublished.withLock { $0 = index }
            writing.withLock { $0 = false }
        }
        for _ in 0..<2 {
            Thread.detachNewThread {
                var lastVersion: UInt64 = 0
                var count = 0
                var changed = 0
                startedReaders.withLock { $0 += 1 }
                // Bounded: until the writer is done, and at most 10 million reads.
                while writing.current, count < 10_000_000 {
                    count += 1
                    guard let lane = gate.current() else { continue }
                    if !Self.isPublished(lane) { torn.withLock { $0 += 1 } }
                    if lane.version < lastVersion { backwards.withLock { $0 += 1 } }
                    if lane.version != lastVersion {
                        changed += 1
                        changesSoFar.withLock { $0 += 1 }
                    }
                    lastVersion = lane.version
                }
                reads.withLock { $0 += count }
                changes.withLock { $0 += changed }
                finishedReaders.withLock { $0 += 1 }
            }
        }
        #expect(await eventually(timeout: .seconds(120)) { finishedReaders.current == 2 })
        #expect(torn.current == 0)
        #expect(backwards.current == 0)
        #expect(reads.current > 0)
        // Beyond the first version each reader saw: the readers read while the writer published.
        #expect(changes.current > 2, "\(changes.current) versions seen change")
        #expect(gate.current().map(Self.isPublished) == true)
        #expect(gate.current()?.captureLimits.maximumKeys == lastPublished.current + 1)
    }
}
