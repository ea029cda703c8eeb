// The program the child-process tests run, as a user's program would use JustLog.
//
//   JustLogTestChild exit-without-flush FOLDER COUNT   logs COUNT events to a file and returns from main
//   JustLogTestChild exit-call FOLDER COUNT            the same, then calls exit(0)
//   JustLogTestChild exit-slow-destination FOLDER COUNT  the same through a slow destination, exit patience 3 s
//   JustLogTestChild exit-stopped FOLDER COUNT          the same, stopping itself (SIGSTOP) in the exit flush
//   JustLogTestChild exit-stopped-stalled FOLDER COUNT  the same, its destination stalled once continued
//   JustLogTestChild full-queue-stopped FOLDER COUNT    stops itself (SIGSTOP) while a log call waits for room
//   JustLogTestChild exit-from-destination FOLDER -    a destination calls exit(3) on its first write
//   JustLogTestChild logstash-loop FOLDER PORT TAG     logs "TAG-<i>" to Logstash (plain TCP, 127.0.0.1:PORT)
//                                                      forever, printing i on stdout after each call returns
//   JustLogTestChild logstash-drain FOLDER PORT        sets up the same destination, forceSends what the
//                                                      spool holds, exits 0 (or 1 with the error)
//   JustLogTestChild logstash-count FOLDER PORT COUNT  logs COUNT events to Logstash, forceSends, exits 0 (or 1)
//   JustLogTestChild soak FOLDER PORT RATE SECONDS     file + Logstash at RATE events/s for SECONDS (the soak)
//   JustLogTestChild unresolvable FOLDER COUNT         the documented snippet's unresolvable host: logs COUNT
//                                                      events and returns from main
//   JustLogTestChild spool-cap FOLDER PORT             with nothing listening on PORT, logs three rounds of
//                                                      40 000 1-KiB events into the default 64 MiB spool; prints
//                                                      "round N rss BYTES" after each
//   spool-missing-folder, spool-file-size-limit,       see SpoolModes.swift
//   spool-reuse-kill, spool-append, spool-held-kill,
//   spool-held-recover
//   journal-kill, journal-kill-threads, journal-kill-unjournaled,  see JournalModes.swift
//   journal-recover, journal-exit-stalled, journal-full-disk, file-broken-pipe
//   front-doors, flush-top-level                       see FrontDoorModes.swift
import Foundation
import JustLog
import JustLogCore

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: JustLogTestChild MODE FOLDER ARG [TAG]\n".utf8))
    exit(2)
}
let mode = arguments[1]
let logger = JustLog.Logger.shared
logger.baseUrlForFileLogging = URL(fileURLWithPath: arguments[2], isDirectory: true)
logger.logFilename = "child.log"
logger.enableConsoleLogging = false

switch mode {
case "exit-without-flush", "exit-call":
    logger.setup()
    for index in 0..<(Int(arguments[3]) ?? 0) {
        logger.info("child event \(index)", userInfo: ["index": index])
    }
    if mode == "exit-call" { exit(0) }

case "exit-before-setup":
    for index in 0..<(Int(arguments[3]) ?? 0) {
        logger.info("child event \(index)", userInfo: ["index": index])
    }

case "logstash-loop", "logstash-drain":
    setUpLogstashOnly(logger, port: arguments[3])
    if mode == "logstash-loop" {
        let tag = arguments.count > 4 ? arguments[4] : "run"
        for index in 0..<1_000_000 {
            logger.info("\(tag)-\(index)")
            FileHandle.standardOutput.write(Data("\(index)\n".utf8))
        }
    } else {
        forceSendOrExit(logger, failure: "drain failed")
    }

case "journal-kill":
    journalKill(logger, variant: arguments[3], port: arguments.count > 4 ? arguments[4] : "0")

case "journal-kill-threads":
    journalKillThreads(logger, threads: Int(arguments[3]) ?? 2)

case "journal-kill-unjournaled":
    journalKillUnjournaled(logger)

case "journal-recover":
    journalRecover(logger, run: arguments.count > 4 ? arguments[4] : nil)

case "journal-recover-console":
    logger.enableConsoleLogging = true
    journalRecover(logger, run: nil)

case "journal-recover-renamed":
    // The log file renamed since the earlier run: its journal is another's now.
    logger.logFilename = "renamed.log"
    journalRecover(logger, run: nil)

case "journal-recover-errors-only":
    // Console and file take errors only: no destination takes the "recovered" warning.
    logger.enableConsoleLogging = true
    logger.consoleMinimumLevel = .error
    logger.fileMinimumLevel = .error
    journalRecover(logger, run: nil)

case "journal-recover-console-unusable-logstash":
    // Logstash settings that can't work (a spool cap below the resend window): its route drops what it is given.
    logger.enableConsoleLogging = true
    logger.logstashHost = "127.0.0.1"
    logger.logstashPort = 9
    logger.logstashUseTLS = false
    logger.logstashSpoolCapacity = 1 << 20
    journalRecover(logger, run: nil)

case "journal-exit-stalled":
    journalExitStalled(logger, count: arguments[3], run: arguments.count > 4 ? arguments[4] : nil)

case "file-broken-pipe":
    fileBrokenPipe(logger, folder: arguments[2])

case "journal-full-disk":
    journalFullDisk(logger, folder: arguments[2])

case "exit-slow-destination":
    exitWithSlowDestination(folder: arguments[2], count: arguments[3])

case "exit-stopped":
    exitToBeStopped(folder: arguments[2], count: arguments[3])

case "exit-stopped-stalled":
    exitToBeStopped(folder: arguments[2], count: arguments[3], stallingAfterTheStop: true)

case "full-queue-stopped":
    fullQueueToBeStopped(folder: arguments[2], count: arguments[3])

case "exit-from-destination":
    exitFromDestination()

case "exit-in-forcesend":
    exitInForceSend(logger, variant: arguments[3], port: arguments.count > 4 ? arguments[4] : "0")

case "exit-flush-error":
    exitWithAFlushError()

case "setup-close-failure":
    setupWithAFailingCloseThenWithout(logger, folder: arguments[2])

case "soak":
    soak(
        folder: arguments[2],
        port: arguments[3],
        rate: arguments.count > 4 ? arguments[4] : "1000",
        seconds: arguments.count > 5 ? arguments[5] : "60"
    )

case "logstash-count":
    logstashCount(logger, folder: arguments[2], port: arguments[3], count: arguments.count > 4 ? arguments[4] : "0")

case "spool-cap":
    logger.enableFileLogging = false
    logger.logstashHost = "127.0.0.1"
    logger.logstashPort = UInt16(arguments[3]) ?? 0
    logger.logstashUseTLS = false
    // Past the journal's half, calls queue in memory while the pipeline's thread appends and drops at the cap: the
    // queue fills to its bound in whichever round the race puts it (a loaded machine: the fourth). A 4 MiB bound
    // keeps that growth well under the test's 16 MiB over rounds 2 to 4, so what fails the test is a leak.
    var limits = logger.pipelineConfiguration
    limits.maximumQueuedBytes = 4 << 20
    logger.pipelineConfiguration = limits
    logger.setup()
    let payload = String(repeating: "x", count: 1000)
    for round in 1...4 {
        for index in 0..<40_000 { logger.info("round \(round) event \(index) \(payload)") }
        _ = logger.pipeline.flush(timeout: 0.2)
        FileHandle.standardOutput.write(
            Data("round \(round) rss \(residentBytes()) anon \(residentAnonymousBytes())\n".utf8)
        )
    }

case "spool-missing-folder": spoolMissingFolder(arguments)
case "spool-file-size-limit": spoolFileSizeLimit(arguments)
case "spool-reuse-kill": spoolReuseKill(arguments)
case "spool-held-kill": spoolHeldKill(arguments)
case "spool-held-recover": spoolHeldRecover(arguments)
case "spool-append": spoolAppend(arguments)

case "unresolvable":
    logger.enableFileLogging = false
    logger.logstashHost = "my.logstash.endpoint.com"
    logger.logstashPort = 3515
    logger.setup()
    for index in 0..<(Int(arguments[3]) ?? 0) {
        logger.info("unresolvable \(index)")
    }

case "file-size-limit": fileSizeLimitMode(arguments)
case "file-size-limit-rotating": fileSizeLimitRotatingMode(arguments)
case "file-size-limit-raised": fileSizeLimitRaisedMode(arguments)
case "file-size-limit-lowered": fileSizeLimitLoweredMode(arguments)
case "file-size-limit-oversized": fileSizeLimitOversizedMode(arguments)
case "file-size-limit-refused": fileSizeLimitRefusedMode(arguments)
case "hostile-value": logHostileValue(arguments)
case "front-doors":
    frontDoors(logger, threads: Int(arguments[3]) ?? 4, events: arguments.count > 4 ? Int(arguments[4]) ?? 1000 : 1000)

case "flush-top-level":
    // Top-level code: `flush()` has no synchronous twin, so this waits and throws (nothing is set up).
    do {
        try await logger.flush()
        FileHandle.standardOutput.write(Data("flush returned without error\n".utf8))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("flush threw: \(error)\n".utf8))
        exit(3)
    }

default:
    FileHandle.standardError.write(Data("unknown mode \(mode)\n".utf8))
    exit(2)
}

/// Resident memory of this process, in bytes (Linux `/proc/self/statm`).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// The resident bytes that are not pages of mapped files (`RssAnon`): the heap and the stacks, without the spool's
/// and the journal's segments, whose resident pages rise and fall by a segment as the oldest is dropped at the cap.
func residentAnonymousBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") })
    else { return 0 }
    return (line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0) * 1024
}

final class LockedFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var message: String?
    func set(_ value: String?) { lock.withLock { message = value } }
    func get() -> String? { lock.withLock { message } }
}
