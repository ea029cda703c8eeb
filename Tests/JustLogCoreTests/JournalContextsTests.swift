import Foundation
import JustLogTestSupport
import Testing

@testable import JustLogCore

/// Each set-up's context, saved beside the journal for the events an earlier run left unwritten (see
/// `JournalContexts`).
@Suite struct JournalContextsTests {
    func builder(_ prefix: UInt64, run: String) -> RecordBuilder {
        RecordBuilder(
            defaultUserInfo: [
                "run": .string(run), "big": .uint(.max), "ratio": .double(-0.25), "ok": .bool(true), "none": .null,
                "nested": ["list": [1, "two"], "empty": .object([:])], "clé": "✓",
            ],
            runtime: RuntimeInfo(appVersion: "2.1 (\(run))", osVersion: "os \(run)", device: "device \(run)"),
            eventIDs: EventIDGenerator(prefix: prefix)
        )
    }

    func contextFiles(in folder: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("context.") }.sorted()
    }

    /// A context read back builds the record its set-up would have built: defaults of every kind, the versions, the
    /// device (each differs between the set-ups here, so a field taken from the wrong one shows).
    @Test func aSavedContextBuildsTheRecordItsSetUpWouldHaveBuilt() throws {
        let folder = try TemporaryDirectory(prefix: "contexts")
        defer { folder.remove() }
        let first = builder(0xA1, run: "first")
        #expect(JournalContexts.exchange(first, in: folder.path).isEmpty)
        let earlier = JournalContexts.exchange(builder(0xB2, run: "second"), in: folder.path)
        #expect(earlier.keys.sorted() == [0xA1])
        let event = LogEvent(
            level: .info,
            message: "m",
            userInfo: ["call": 1],
            callSite: CallSite(file: "F.swift", function: "f()", line: 1),
            timestamp: LogTimestamp(nanosecondsSinceEpoch: 1_700_000_000_000_000_000)
        )
        let expected = first.record(for: event, sequence: 9)
        let rebuilt = try #require(earlier[0xA1]).record(for: event, sequence: 9)
        #expect(rebuilt.metadata == expected.metadata)
        #expect(rebuilt.eventID == expected.eventID)
        // The JSON text is the same (`.uint` of a small number reads back as `.int`: both write `5`).
        #expect(JSONWriter.encode(.object(rebuilt.userInfo)) == JSONWriter.encode(.object(expected.userInfo)))
        #expect(
            try contextFiles(in: folder).allSatisfy { name in
                let attributes = try FileManager.default.attributesOfItem(atPath: folder.file(name))
                return (attributes[.posixPermissions] as? Int) == 0o600
            }
        )
    }

    /// The newest 16 set-ups' files are kept, ranked by the number in their names — not their times: a clock set
    /// back ranked the file just saved as the oldest, and deleted it (review, helper-55). A reconfiguration saves its
    /// set-up's context again under a new number; a set-up that shuts down with nothing unwritten deletes its own
    /// and every earlier one, but not a later set-up's.
    @Test func theNewestSixteenAreKeptByTheirNumbersAndAShutdownDeletesItsOwnAndEarlierOnes() throws {
        let folder = try TemporaryDirectory(prefix: "contexts-kept")
        defer { folder.remove() }
        for prefix in UInt64(1)...20 {
            _ = JournalContexts.exchange(builder(prefix, run: "r\(prefix)"), in: folder.path)
            // Each file dated in the past, earlier the later it was saved (a clock set back).
            let name = try #require(
                try contextFiles(in: folder).first { $0.hasSuffix(".\(String(prefix, radix: 16)).json") }
            )
            let date = Date(timeIntervalSince1970: 2_000_000_000 - Double(prefix) * 1_000)
            try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: folder.file(name))
        }
        var kept = JournalContexts.builders(in: folder.path, except: 0, limits: CaptureLimits())
        #expect(kept.keys.sorted() == Array(5...20))
        // Set-up 12 reconfigured: its context again, newest now; still 16 files.
        let others = JournalContexts.exchange(builder(12, run: "r12 again"), in: folder.path)
        #expect(others.keys.sorted() == Array(5...20).filter { $0 != 12 }, "what the set-up gets: the others kept")
        kept = JournalContexts.builders(in: folder.path, except: 0, limits: CaptureLimits())
        #expect(kept.count == 16)
        #expect(kept[12]?.defaultUserInfo["run"] == "r12 again")
        // Set-up 15 shuts down with nothing unwritten: 5…11, 13…15 go (saved before it), 16…20 and 12 (later) stay.
        JournalContexts.removeAll(in: folder.path, upToThatOf: 15)
        kept = JournalContexts.builders(in: folder.path, except: 0, limits: CaptureLimits())
        #expect(kept.keys.sorted() == [12, 16, 17, 18, 19, 20])
    }
}
