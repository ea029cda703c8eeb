// Modes of the child program for the Logstash spool's availability (see main.swift for the others):
//
//   JustLogTestChild spool-missing-folder FOLDER PORT COUNT   the documented setup with file logging off and a
//       log folder (FOLDER) that does not exist: logs COUNT events "spool-<i>" to Logstash (plain TCP,
//       127.0.0.1:PORT), forceSends, prints "forceSend: ok" or "forceSend: <error>", exits 0
//   JustLogTestChild spool-file-size-limit FOLDER PORT COUNT  the same under a 1 MiB file-size limit (below the
//       spool's 4 MiB segment): prints the first forceSend's result, then raises the limit again and prints
//       "after raising the limit: ok" once a forceSend succeeds (or the last error), exits 0
//   JustLogTestChild spool-reuse-kill FOLDER COUNT  a bare spool whose segments are reused while it is appended to
//       and acknowledged, to be killed (see spoolReuseKill)
//   JustLogTestChild spool-append FOLDER COUNT  opens a bare spool of 64 KiB segments in FOLDER and appends COUNT
//       records of ~100 bytes: prints "appended COUNT" and exits 0, or says why on stderr and exits 1
//   JustLogTestChild spool-held-kill FOLDER PORT COUNT  the documented setup with its file (journaled) and Logstash
//       (plain TCP, 127.0.0.1:PORT), whose spool folder (FOLDER/child.log.spool) the test holds: logs COUNT events
//       "held-<i>", flushes (the Logstash destination can only hold them in memory), prints "written", waits to be
//       killed
//   JustLogTestChild spool-held-recover FOLDER PORT  the same setup, once the test let go of the spool folder:
//       forceSends; exits 0, or 1 with the error on stderr
import Foundation
import JustLog
import JustLogCore

#if canImport(Glibc)
import Glibc
#endif

/// Sets up `Logger.shared` for Logstash only (plain TCP to 127.0.0.1:`port`), logs `count` events.
private func logToLogstash(port: String, count: String) {
    let logger = Logger.shared
    setUpLogstashOnly(logger, port: port)
    for index in 0..<(Int(count) ?? 0) {
        logger.info("spool-\(index)")
    }
}

/// `Logger.shared.forceSend`'s result: "ok" or the error.
private func forceSendResult() -> String {
    forceSendError(Logger.shared) ?? "ok"
}

private func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func spoolMissingFolder(_ arguments: [String]) {
    logToLogstash(port: arguments[3], count: arguments.count > 4 ? arguments[4] : "0")
    say("forceSend: \(forceSendResult())")
}

func spoolFileSizeLimit(_ arguments: [String]) {
    // Started by the test runner, this process inherits its blocked-signal mask (SIGXFSZ included); a program
    // started from a shell blocks nothing, so that a file-size limit kills it unless JustLog prevents that.
    var nothing = sigset_t()
    sigemptyset(&nothing)
    sigprocmask(SIG_SETMASK, &nothing, nil)
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    let original = limit
    limit.rlim_cur = 1 << 20
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else {
        say("setrlimit failed: \(String(cString: strerror(errno)))")
        exit(3)
    }
    logToLogstash(port: arguments[3], count: arguments.count > 4 ? arguments[4] : "0")
    say("forceSend: \(forceSendResult())")
    // The soft limit may be raised back up to the hard one by any user.
    var restored = original
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &restored)
    var result = ""
    for _ in 0..<100 {
        result = forceSendResult()
        if result == "ok" { break }
        usleep(200_000)
    }
    say("after raising the limit: \(result)")
}

/// `spool-reuse-kill FOLDER COUNT`: a spool of 64 KiB segments in FOLDER. The main thread appends COUNT records
/// "reuse record <i>" (padded to ~100 bytes), printing i after each append returns; a second thread reads and
/// acknowledges behind it, printing "acked <n>" once records 0..<n are acknowledged — so that segments retire,
/// become the spare and are reused all the while. Then waits to be killed. With a fifth argument K, the main thread
/// stops right after record K's append returns, before printing K, until the reader has acknowledged it — where a
/// kill lands now and then — and waits there to be killed.
func spoolReuseKill(_ arguments: [String]) {
    let configuration = Spool.Configuration(directory: arguments[2], segmentBytes: 64 << 10, maxRecordBytes: 1024)
    let spool: Spool
    do {
        spool = try Spool(configuration: configuration)
    } catch {
        FileHandle.standardError.write(Data("can't open the spool: \(error)\n".utf8))
        exit(1)
    }
    let count = Int(arguments[3]) ?? 0
    let stallAt = arguments.count > 4 ? Int(arguments[4]) : nil
    let acknowledgedSoFar = AcknowledgedCount()
    Thread.detachNewThread {
        var acknowledged = 0
        while acknowledged < count {
            let batch = spool.read(from: spool.cursor, maxBytes: 1 << 20, maxRecords: 200)
            if batch.recordCount == 0 {
                usleep(100)
                continue
            }
            spool.acknowledge(upTo: batch.end)
            acknowledged += batch.recordCount
            acknowledgedSoFar.set(acknowledged)
            say("acked \(acknowledged)")
        }
    }
    let padding = String(repeating: "x", count: 80)
    for index in 0..<count {
        do {
            try spool.append(Array("reuse record \(index) \(padding)".utf8))
        } catch {
            FileHandle.standardError.write(Data("append \(index) failed: \(error)\n".utf8))
            exit(1)
        }
        if index == stallAt {
            while acknowledgedSoFar.value <= index { usleep(1_000) }
            break
        }
        say("\(index)")
    }
    while true { Thread.sleep(forTimeInterval: 3_600) }
}

/// How many records `spool-reuse-kill`'s reader has acknowledged.
private final class AcknowledgedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }

    func set(_ value: Int) { lock.withLock { count = value } }
}

/// `spool-append FOLDER COUNT` (see the top of this file).
func spoolAppend(_ arguments: [String]) {
    let configuration = Spool.Configuration(directory: arguments[2], segmentBytes: 64 << 10, maxRecordBytes: 1024)
    let count = Int(arguments[3]) ?? 0
    let padding = String(repeating: "x", count: 80)
    do {
        let spool = try Spool(configuration: configuration)
        for index in 0..<count { try spool.append(Array("appended record \(index) \(padding)".utf8)) }
        spool.close()
    } catch {
        FileHandle.standardError.write(Data("spool-append: \(error)\n".utf8))
        exit(1)
    }
    say("appended \(count)")
}

/// The documented setup with its file and Logstash (plain TCP to 127.0.0.1:`port`), both journaled.
private func setUpFileAndLogstash(_ logger: Logger, port: String) {
    logger.logstashHost = "127.0.0.1"
    logger.logstashPort = UInt16(port) ?? 0
    logger.logstashUseTLS = false
    logger.logstashTimeout = 0.2
    logger.setup()
}

/// `spool-held-kill FOLDER PORT COUNT` (see the top of this file).
func spoolHeldKill(_ arguments: [String]) {
    let logger = Logger.shared
    setUpFileAndLogstash(logger, port: arguments[3])
    for index in 0..<(Int(arguments[4]) ?? 0) {
        logger.info("held-\(index)")
    }
    // Every event written to every destination: the file has them, the Logstash destination holds them in memory
    // (and says so: the flush fails).
    let failure = logger.pipeline.flush(timeout: 120)
    FileHandle.standardError.write(Data("flush: \(failure.map { "\($0)" } ?? "ok")\n".utf8))
    FileHandle.standardOutput.write(Data("written\n".utf8))
    while true { Thread.sleep(forTimeInterval: 3_600) }
}

/// `spool-held-recover FOLDER PORT` (see the top of this file).
func spoolHeldRecover(_ arguments: [String]) {
    let logger = Logger.shared
    setUpFileAndLogstash(logger, port: arguments[3])
    forceSendOrExit(logger, failure: "forceSend failed")
}
