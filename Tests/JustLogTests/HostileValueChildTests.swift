import Foundation
import JustLogCore
import JustLogTestSupport
import Testing

/// One hostile value the child logs (`JustLogTestChild hostile-value FOLDER KIND`, see `ValueModes.swift`) and
/// what its record must hold.
struct HostileValueCase: Sendable, CustomTestStringConvertible {
    let kind: String
    let check: @Sendable (LogRecord) -> Void
    var testDescription: String { kind }
}

private func truncated(_ record: LogRecord) -> String {
    if case .string(let text)? = record.userInfo["truncated"] { return text }
    return "<no truncated field>"
}

/// The `user_info` of the `index`-th error of the record's chain.
private func errorUserInfo(_ record: LogRecord, _ index: Int) -> [String: LogValue]? {
    guard case .array(let links)? = record.userInfo[UserInfoKey.errors], links.indices.contains(index),
        case .object(let link) = links[index], case .object(let userInfo)? = link["user_info"]
    else { return nil }
    return userInfo
}

private func cycle(_ expected: LogValue) -> @Sendable (LogRecord) -> Void {
    { record in
        #expect(record.userInfo["value"] == expected)
        #expect(truncated(record).contains("userInfo.value"), "\(truncated(record))")
        #expect(truncated(record).contains("cycle"), "\(truncated(record))")
    }
}

private func depth(_ marker: String) -> @Sendable (LogRecord) -> Void {
    { record in
        var levels = 0
        var current = record.userInfo["value"]
        while case .array(let elements)? = current {
            levels += 1
            current = elements.first
        }
        #expect(levels == 32)
        #expect(current == .string(marker))
        #expect(truncated(record).contains("nested deeper than 32"), "\(truncated(record))")
    }
}

let hostileValueCases: [HostileValueCase] = [
    HostileValueCase(kind: "array-self", check: cycle(["first", "<cycle: NSMutableArray>"])),
    HostileValueCase(kind: "optional-array", check: cycle(["first", "<cycle: NSMutableArray>"])),
    HostileValueCase(kind: "hashable-array", check: cycle(["first", "<cycle: NSMutableArray>"])),
    HostileValueCase(kind: "dictionary-self", check: cycle(["name": "outer", "self": "<cycle: NSMutableDictionary>"])),
    HostileValueCase(kind: "mutual", check: cycle([["back": "<cycle: NSMutableArray>"]])),
    HostileValueCase(kind: "set-cycle", check: cycle([["<cycle: NSMutableSet>"]])),
    HostileValueCase(kind: "ordered-set-self", check: cycle(["first", "<cycle: NSMutableOrderedSet>"])),
    HostileValueCase(kind: "error-self") { record in
        #expect(record.userInfo[UserInfoKey.errorDomain] == "hostile")
        #expect(errorUserInfo(record, 0)?["list"] == ["<cycle: NSError>"])
        #expect(truncated(record).contains("errors[0].user_info.list[0]: cycle"), "\(truncated(record))")
    },
    HostileValueCase(kind: "error-loop") { record in
        guard case .array(let links)? = record.userInfo[UserInfoKey.errors] else {
            Issue.record("no errors array")
            return
        }
        #expect(links.count == 2, "the chain stops where it loops back")
        #expect(errorUserInfo(record, 0)?["self"] == "<cycle: LoopingError>")
        #expect(truncated(record).contains("errors[0].user_info.self: cycle"), "\(truncated(record))")
    },
    HostileValueCase(kind: "swift-depth", check: depth("<nested deeper than 32: Array<Any>>")),
    HostileValueCase(kind: "nsarray-depth", check: depth("<nested deeper than 32: NSMutableArray>")),
]

/// Values that crash a caller that bridges or describes them without a cycle check run in a child process, so
/// that a crash fails the test instead of ending the test run. The child writes its output to files, not pipes:
/// nothing to wait for once it has exited.
@Suite struct HostileValueChildTests {
    @Test(arguments: hostileValueCases)
    func hostileValueIsLoggedWithAMarkerAndTheCallerSurvives(_ hostile: HostileValueCase) async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let output = folder.appending("stdout")
        let errors = folder.appending("stderr")
        for url in [output, errors] { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        let process = Process()
        process.executableURL = try childProgram()
        process.arguments = ["hostile-value", folder.path, hostile.kind]
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        if !(await eventually(timeout: .seconds(120)) { !process.isRunning }) {
            kill(process.processIdentifier, SIGKILL)
            _ = await eventually(timeout: .seconds(60)) { !process.isRunning }
            Issue.record("the child did not exit within 120 s")
        }
        process.waitUntilExit()
        let status = process.terminationStatus
        let errorOutput = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(
            status == 0 && process.terminationReason == .exit,
            "the child ended with \(status) (\(process.terminationReason == .exit ? "exit" : "signal")): \(errorOutput.prefix(400))"
        )
        guard status == 0 else { return }
        #expect(try String(contentsOf: output, encoding: .utf8) == "logged\n", "the log call returned")
        let text = try String(contentsOf: folder.appending("child.log"), encoding: .utf8)
        let records = try text.split(separator: "\n").map { try FileLine(parsing: $0).record }
        let record = try #require(
            records.first { $0.message == "hostile \(hostile.kind)" },
            "no event in \(records.map(\.message))"
        )
        hostile.check(record)
    }
}
