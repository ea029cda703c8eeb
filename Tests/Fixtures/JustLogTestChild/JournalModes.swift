import Foundation
import JustLog
import JustLogCore

/// `journal-kill FOLDER VARIANT PORT`: `Logger.shared` with its file (`child.log`, journaled by default) — and,
/// for the variant `file+logstash`, Logstash on 127.0.0.1:PORT, where nothing listens — plus a destination that
/// takes 0.2 ms per record and stops for good after 10,000, so that the file lags behind the calls as on a loaded
/// machine, by thousands of events whenever the kill comes. Logs "journal event <i>" 20,000 times, printing i on
/// stdout after each call returns, then waits to be killed. (A full queue spills into the journal, so the calls
/// run ahead of the file; logging forever would let the file's rotation delete its oldest lines.)
func journalKill(_ logger: Logger, variant: String, port: String) {
    // Slow, then stalled for good after 10,000 records: however late the kill comes (a loaded machine reads the
    // child's output late), the file holds at most those and a batch, not the 20,000 logged.
    logger.additionalDestinations = [
        .init(SlowDestination(StallingDestination(after: 10_000), delayPerRecord: 0.000_2))
    ]
    if variant == "file+logstash" {
        logger.logstashHost = "127.0.0.1"
        logger.logstashPort = UInt16(port) ?? 0
        logger.logstashUseTLS = false
        logger.logstashTimeout = 0.2
    }
    logger.setup()
    for index in 0..<20_000 {
        logger.info("journal event \(index)", userInfo: ["index": index])
        FileHandle.standardOutput.write(Data("\(index)\n".utf8))
    }
    while true { Thread.sleep(forTimeInterval: 3_600) }
}

/// `journal-kill-threads FOLDER THREADS`: `Logger.shared` with its file (journaled by default) and a destination that
/// takes 0.1 ms per record, so that the file lags behind the calls; THREADS threads each log "t<k>-<i>"
/// through the fast lane until killed, at most 40,000 times (all of them fit the file and the 5 it keeps when it
/// rotates, here and in the restart's default settings), printing "t<k> <i>" on stdout after each call returns. Killed mid-stream, some thread is likely between taking its record's place in the journal and filling
/// it: the place recovery must skip without counting a loss.
func journalKillThreads(_ logger: Logger, threads: Int) {
    logger.additionalDestinations = [.init(SlowDestination(NullDestination(), delayPerRecord: 0.000_1))]
    logger.setup()
    for thread in 0..<threads {
        Thread.detachNewThread {
            for index in 0..<40_000 {
                logger.info("t\(thread)-\(index)", userInfo: ["index": index])
                FileHandle.standardOutput.write(Data("t\(thread) \(index)\n".utf8))
            }
        }
    }
    while true { Thread.sleep(forTimeInterval: 3_600) }
}

/// `journal-kill-unjournaled FOLDER -`: `Logger.shared` with its file (journaled by default), messages up to 8 MiB
/// (more than a journal segment takes), and a destination after the file that holds its first write until the
/// calls below have returned. Logs "hold", then "journal event <i>" 100 times, each with an error (so that the call
/// takes the full path, not the fast lane, and waits in the queue with its journal place), then one 5 MiB message the
/// journal can't take. The worker writes them in one batch; the destination prints "stalled" once it is given the
/// 5 MiB event — the file has it, the journal is not acknowledged yet — and waits to be killed.
func journalKillUnjournaled(_ logger: Logger) {
    let gate = DispatchSemaphore(value: 0)
    logger.captureLimits = CaptureLimits(maximumMessageBytes: 8 << 20)
    logger.additionalDestinations = [.init(StallingAtLargeEventDestination(gate: gate))]
    logger.setup()
    logger.info("hold")
    struct Failure: Error {}
    for index in 0..<100 {
        logger.error("journal event \(index)", error: Failure(), userInfo: ["index": index])
    }
    logger.info("big " + String(repeating: "x", count: 5 << 20))
    gate.signal()
    while true { Thread.sleep(forTimeInterval: 3_600) }
}

/// Holds its first write until `gate` is signalled; prints "stalled" and blocks forever once given an event larger
/// than 4 MiB.
final class StallingAtLargeEventDestination: LogDestination {
    private let gate: DispatchSemaphore
    private let first = LockedValue(true)

    init(gate: DispatchSemaphore) {
        self.gate = gate
    }

    func write(_ batch: LogBatch) {
        let isFirst = first.withLock { first in
            defer { first = false }
            return first
        }
        if isFirst { gate.wait() }
        guard batch.records.contains(where: { $0.message.utf8.count > 4 << 20 }) else { return }
        FileHandle.standardOutput.write(Data("stalled\n".utf8))
        while true { Thread.sleep(forTimeInterval: 3_600) }
    }
}

/// `journal-recover FOLDER - [RUN]`: sets up `Logger.shared` on the same file (and so the same journal) — with
/// `defaultUserInfo` `["run": RUN]` if given — waits until what the journal recovered is written, and exits 0 (or 1
/// with the error).
func journalRecover(_ logger: Logger, run: String?) {
    if let run { logger.defaultUserInfo = ["run": run] }
    logger.setup()
    if let error = logger.pipeline.flush(timeout: 120) {
        FileHandle.standardError.write(Data("flush failed: \(error)\n".utf8))
        exit(1)
    }
}

/// Takes every record and does nothing with it.
final class NullDestination: LogDestination {
    func write(_ batch: LogBatch) {}
}

/// `journal-exit-stalled FOLDER COUNT [RUN]`: `Logger.shared` with its file and a destination that stops for good
/// after 1,000 records (a hung terminal, a dead network file system), exit patience 1 s — and `defaultUserInfo`
/// `["run": RUN]` if given; logs COUNT "journal event <i>" and returns from main. The exit handler gives up on the
/// stalled pipeline: what it did not write is left in the journal, and a line on stderr says so.
func journalExitStalled(_ logger: Logger, count: String, run: String?) {
    if let run { logger.defaultUserInfo = ["run": run] }
    logger.additionalDestinations = [.init(StallingDestination(after: 1_000))]
    logger.pipelineConfiguration = .init(exitFlushTimeout: 1)
    logger.setup()
    for index in 0..<(Int(count) ?? 0) {
        logger.info("journal event \(index)", userInfo: ["index": index])
    }
}

/// Takes `after` records, then blocks forever in `write`.
final class StallingDestination: LogDestination {
    private let remaining: LockedValue<Int>

    init(after count: Int) {
        remaining = LockedValue(count)
    }

    func write(_ batch: LogBatch) {
        let left = remaining.withLock { left in
            defer { left -= batch.records.count }
            return left
        }
        if left - batch.records.count < 0 {
            while true { Thread.sleep(forTimeInterval: 3_600) }
        }
    }
}

/// `journal-full-disk FOLDER -`: `Logger.shared` with its file (journaled by default) in FOLDER, the root of a disk of
/// its own, and a destination that prints each event's message on stdout. Logs "journal event <i>" 200 times, makes
/// the journal's pages durable (`sync`: on a copy-on-write file system a page written back needs new blocks the
/// next time it is written), fills the disk with FOLDER/filler, logs 2,000 more, flushes, prints "done" and exits 0.
/// On a full btrfs, a write into a page of the journal's mapping written before killed the program with SIGBUS.
func journalFullDisk(_ logger: Logger, folder: String) {
    logger.additionalDestinations = [.init(PrintingDestination())]
    logger.setup()
    for index in 0..<200 {
        logger.info("journal event \(index)", userInfo: ["index": index])
    }
    _ = logger.pipeline.flush(timeout: 120)
    sync()
    FileHandle.standardOutput.write(Data("filling \(fillDisk(file: folder + "/filler")) bytes\n".utf8))
    for index in 200..<2_200 {
        logger.info("journal event \(index)", userInfo: ["index": index])
    }
    // The file can't take what it is given on the full disk: it says so, and its flush fails.
    if let error = logger.pipeline.flush(timeout: 120) {
        FileHandle.standardError.write(Data("flush: \(error)\n".utf8))
    }
    FileHandle.standardOutput.write(Data("done\n".utf8))
    exit(0)
}

/// Writes `file` until the disk is full (64 KiB writes, then 4 KiB ones, each round made durable: a file system that
/// frees space as it writes back takes more); returns the bytes written.
private func fillDisk(file: String) -> Int {
    let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var filled = 0
    let chunk = [UInt8](repeating: 0x5A, count: 64 << 10)
    for size in [64 << 10, 4 << 10, 4 << 10] {
        while true {
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, size) }
            guard written > 0 else { break }
            filled += written
        }
        fsync(fd)
    }
    return filled
}

/// Prints each record's message on stdout, a line each.
final class PrintingDestination: LogDestination {
    func write(_ batch: LogBatch) {
        let text = batch.records.map { $0.message + "\n" }.joined()
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// `file-broken-pipe FOLDER -`: `SIGPIPE` at its default action (a write to a pipe no one reads kills the program);
/// `Logger.shared`'s file is FOLDER/child.log, a FIFO whose reader reads 5 events' lines and closes; 10 more events;
/// prints "pending <0|1>, <default|changed>" (a `SIGPIPE` left pending for the process; its disposition) and exits 0
/// — or dies of `SIGPIPE` (status 141), as it would once the writing thread unblocked a signal left pending on it.
func fileBrokenPipe(_ logger: Logger, folder: String) {
    signal(SIGPIPE, SIG_DFL)
    let path = folder + "/child.log"
    guard mkfifo(path, 0o600) == 0 else { exit(3) }
    let reader = open(path, O_RDONLY | O_NONBLOCK)
    guard reader >= 0 else { exit(4) }
    logger.setup()
    for index in 0..<5 { logger.info("pipe event \(index)") }
    _ = logger.pipeline.flush(timeout: 60)
    var bytes = [UInt8](repeating: 0, count: 1 << 16)
    _ = bytes.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
    close(reader)
    for index in 5..<15 { logger.info("pipe event \(index)") }
    _ = logger.pipeline.flush(timeout: 60)
    var pending = sigset_t()
    sigpending(&pending)
    var disposition = sigaction()
    sigaction(SIGPIPE, nil, &disposition)
    #if canImport(Darwin)
    let action = disposition.__sigaction_u.__sa_handler == nil ? "default" : "changed"
    #else
    let action = disposition.__sigaction_handler.sa_handler == nil ? "default" : "changed"
    #endif
    FileHandle.standardOutput.write(Data("pending \(sigismember(&pending, SIGPIPE)), \(action)\n".utf8))
}
