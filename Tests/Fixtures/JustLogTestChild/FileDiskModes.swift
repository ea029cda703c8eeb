// Child modes for the file destination under a file-size limit (`ulimit -f`), which applies to this process only.
//
//   JustLogTestChild file-size-limit FOLDER COUNT LIMIT
//       sets RLIMIT_FSIZE to LIMIT bytes, logs COUNT events through `Logger.shared` to FOLDER/child.log (the
//       default 10 MiB rotation: past the limit) and returns from main
//   JustLogTestChild file-size-limit-rotating FOLDER COUNT LIMIT ROTATE
//       the same, through a `Logger` whose file rotates at ROTATE bytes (below the limit), keeping 1,000 files,
//       shut down before returning
//   JustLogTestChild file-size-limit-raised FOLDER COUNT LIMIT
//       like file-size-limit for the first half of the events, then flushes, raises the limit again (as far as
//       the hard limit: any user may), flushes, logs the second half and returns from main
//   JustLogTestChild file-size-limit-lowered FOLDER COUNT LIMIT
//       logs the first half of the events with no limit through a `Logger` whose file keeps 1,000 rotated files,
//       flushes, then sets the limit (the file already holds more) and logs the second half; shut down before
//       returning
//   JustLogTestChild file-size-limit-oversized FOLDER COUNT LIMIT
//       like file-size-limit-rotating at the limit, every 100th event's message (from the 50th on) longer than it;
//       flushes after the 60th and prints "flush after 60: ok" or the error on stderr
//   JustLogTestChild file-size-limit-refused FOLDER COUNT LIMIT
//       a directory holds child.log.1, so that rotating the file (1 kept) is refused; logs COUNT events under the
//       limit, flushes (printing "flush while refused: ok" or the error on stderr), removes the directory, waits
//       past the retry interval, logs 100 events "after N", shuts down
import Foundation
import JustLog
import JustLogCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

func fileSizeLimitMode(_ arguments: [String]) {
    limitFileSize(arguments)
    let logger = Logger.shared
    logger.setup()
    for index in 0..<(Int(arguments[3]) ?? 0) {
        logger.info("child event \(index)", userInfo: ["index": index])
    }
}

func fileSizeLimitRotatingMode(_ arguments: [String]) {
    limitFileSize(arguments)
    let rotateAt = arguments.count > 5 ? Int(arguments[5]) ?? 0 : 0
    let url = URL(fileURLWithPath: arguments[2], isDirectory: true).appendingPathComponent("child.log")
    let logger = Logger(
        configuration: .init(
            console: nil,
            file: .init(.init(url: url, maximumFileSize: rotateAt, retainedFileCount: 1_000))
        )
    )
    for index in 0..<(Int(arguments[3]) ?? 0) {
        logger.info("child event \(index)", userInfo: ["index": index])
    }
    logger.shutdown(timeout: 30)
}

func fileSizeLimitRaisedMode(_ arguments: [String]) {
    limitFileSize(arguments)
    let logger = Logger.shared
    logger.setup()
    let count = Int(arguments[3]) ?? 0
    for index in 0..<count / 2 {
        logger.info("child event \(index)", userInfo: ["index": index])
    }
    logger.pipeline.flush(timeout: 30)
    var current = rlimit()
    getrlimit(resourceFileSize, &current)
    var raised = rlimit(rlim_cur: current.rlim_max, rlim_max: current.rlim_max)
    setrlimit(resourceFileSize, &raised)
    // "Space returns": the flush writes the loss report, with nothing new to log.
    logger.pipeline.flush(timeout: 30)
    for index in count / 2..<count {
        logger.info("child event \(index)", userInfo: ["index": index])
    }
}

func fileSizeLimitLoweredMode(_ arguments: [String]) {
    // As a program started from a shell, before any thread that writes the log is started (see `limitFileSize`).
    defaultFileSizeSignal()
    let url = URL(fileURLWithPath: arguments[2], isDirectory: true).appendingPathComponent("child.log")
    let logger = Logger(
        configuration: .init(console: nil, file: .init(.init(url: url, retainedFileCount: 1_000)))
    )
    let count = Int(arguments[3]) ?? 0
    for index in 0..<count / 2 {
        logger.info("child event \(index)", userInfo: ["index": index])
    }
    logger.pipeline.flush(timeout: 30)
    // The file is open, past the limit about to be set: its next write fails with EFBIG.
    setFileSizeLimit(arguments)
    for index in count / 2..<count {
        logger.info("child event \(index)", userInfo: ["index": index])
    }
    logger.shutdown(timeout: 30)
}

func fileSizeLimitOversizedMode(_ arguments: [String]) {
    limitFileSize(arguments)
    let limit = Int(arguments[4]) ?? 0
    let url = URL(fileURLWithPath: arguments[2], isDirectory: true).appendingPathComponent("child.log")
    let logger = Logger(
        configuration: .init(console: nil, file: .init(.init(url: url, retainedFileCount: 1_000)))
    )
    for index in 0..<(Int(arguments[3]) ?? 0) {
        let oversized = index % 100 == 50 ? " " + String(repeating: "x", count: limit) : ""
        logger.info("child event \(index)\(oversized)", userInfo: ["index": index])
        if index == 60 {
            let error = logger.pipeline.flush(timeout: 30)
            FileHandle.standardError.write(Data("flush after 60: \(error.map { "\($0)" } ?? "ok")\n".utf8))
        }
    }
    logger.shutdown(timeout: 30)
}

func fileSizeLimitRefusedMode(_ arguments: [String]) {
    let folder = URL(fileURLWithPath: arguments[2], isDirectory: true)
    let blocker = folder.appendingPathComponent("child.log.1/kept")
    try? FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: true)
    limitFileSize(arguments)
    let logger = Logger(
        configuration: .init(
            console: nil,
            file: .init(.init(url: folder.appendingPathComponent("child.log"), retainedFileCount: 1))
        )
    )
    for index in 0..<(Int(arguments[3]) ?? 0) {
        logger.info("child event \(index)", userInfo: ["index": index])
    }
    let error = logger.pipeline.flush(timeout: 30)
    FileHandle.standardError.write(Data("flush while refused: \(error.map { "\($0)" } ?? "ok")\n".utf8))
    try? FileManager.default.removeItem(at: folder.appendingPathComponent("child.log.1"))
    Thread.sleep(forTimeInterval: 1.2)
    for index in 0..<100 {
        logger.info("after \(index)", userInfo: ["index": index])
    }
    logger.shutdown(timeout: 30)
}

/// Sets the soft RLIMIT_FSIZE to the LIMIT argument (any user may lower it), or exits 3. First SIGXFSZ is put back
/// to its default action and unblocked, as in a program started from a shell (the test runner starts its children
/// with most signals blocked, SIGXFSZ among them), before any thread that writes the log is started.
private func limitFileSize(_ arguments: [String]) {
    defaultFileSizeSignal()
    setFileSizeLimit(arguments)
}

/// SIGXFSZ at its default action and unblocked, as in a program started from a shell (the test runner starts its
/// children with most signals blocked, SIGXFSZ among them): call before JustLog and any thread that writes the log.
private func defaultFileSizeSignal() {
    signal(SIGXFSZ, SIG_DFL)
    var xfsz = sigset_t()
    sigemptyset(&xfsz)
    sigaddset(&xfsz, SIGXFSZ)
    sigprocmask(SIG_UNBLOCK, &xfsz, nil)
}

/// Sets the soft RLIMIT_FSIZE to the LIMIT argument (any user may lower it), or exits 3.
private func setFileSizeLimit(_ arguments: [String]) {
    guard arguments.count > 4, let limit = rlim_t(arguments[4]) else {
        FileHandle.standardError.write(
            Data("usage: JustLogTestChild \(arguments[1]) FOLDER COUNT LIMIT [ROTATE]\n".utf8)
        )
        exit(2)
    }
    var current = rlimit()
    getrlimit(resourceFileSize, &current)
    var limited = rlimit(rlim_cur: limit, rlim_max: current.rlim_max)
    guard setrlimit(resourceFileSize, &limited) == 0 else {
        FileHandle.standardError.write(Data("setrlimit(RLIMIT_FSIZE): \(String(cString: strerror(errno)))\n".utf8))
        exit(3)
    }
}

#if canImport(Glibc)
private let resourceFileSize = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
#else
private let resourceFileSize = RLIMIT_FSIZE
#endif
