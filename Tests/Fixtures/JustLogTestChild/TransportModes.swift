import Foundation
import JustLog

/// `logstash-count FOLDER PORT COUNT`: logs COUNT events ("count-<i>") to Logstash (plain TCP, 127.0.0.1:PORT),
/// file logging off, then `forceSend`s; exits 0, or 1 with the error on stderr. The non-root delivery test runs it
/// as an unprivileged user.
func logstashCount(_ logger: Logger, folder: String, port: String, count: String) -> Never {
    setUpLogstashOnly(logger, port: port)
    for index in 0..<(Int(count) ?? 0) {
        logger.info("count-\(index)")
    }
    forceSendOrExit(logger, failure: "forceSend failed")
    exit(0)
}

/// Sets `logger` up for Logstash only: file logging off, plain TCP to 127.0.0.1:`port`, a 0.2 s send interval.
func setUpLogstashOnly(_ logger: Logger, port: String) {
    logger.enableFileLogging = false
    logger.logstashHost = "127.0.0.1"
    logger.logstashPort = UInt16(port) ?? 0
    logger.logstashUseTLS = false
    logger.logstashTimeout = 0.2
    logger.setup()
}

/// Waits for `forceSend`; on an error, writes "`failure`: error" to stderr and exits 1.
func forceSendOrExit(_ logger: Logger, failure prefix: String) {
    if let message = forceSendError(logger) {
        FileHandle.standardError.write(Data("\(prefix): \(message)\n".utf8))
        exit(1)
    }
}

/// Waits for `forceSend`; returns its error's description, or `nil`.
func forceSendError(_ logger: Logger) -> String? {
    let done = DispatchSemaphore(value: 0)
    let failure = LockedFailure()
    logger.forceSend { error in
        failure.set(error.map { "\($0)" })
        done.signal()
    }
    done.wait()
    return failure.get()
}
