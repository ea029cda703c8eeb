import Foundation
import JustLog
import JustLogCore
import JustLogLogging
import Logging

// Modes of the front-door tests (FrontDoorTests):
//
//   front-doors FOLDER THREADS EVENTS   swift-log bootstrapped to Logger.shared before setup(); THREADS threads
//                                       each log EVENTS events, alternating the facade and swift-log, while the
//                                       main thread calls setup() again three times with new settings; prints
//                                       "done" after a final forceSend
//   flush-top-level FOLDER -            `try await logger.flush()` at the top level of main.swift, before
//                                       setup(): waits and throws (exit 3 with the error)

/// Logs from both front ends on several threads while `setup()` reconfigures the shared logger in place.
func frontDoors(_ logger: JustLog.Logger, threads: Int, events: Int) {
    LoggingSystem.bootstrap(JustLogLogHandler.shared)
    logger.logFileMaximumSize = 1 << 30
    logger.defaultUserInfo = ["phase": 0]
    let swiftLog = Logging.Logger(label: "front-door")
    // Before the first setup(): held, then delivered by it.
    for index in 0..<50 {
        if index % 2 == 0 {
            logger.info("early-\(index)")
        } else {
            swiftLog.info("early-\(index)")
        }
    }
    logger.setup()
    let group = DispatchGroup()
    let setupsDone = LockedValue(0)
    let threadsLogging = LockedValue(0)
    for thread in 0..<threads {
        DispatchQueue.global().async(group: group) {
            for index in 0..<events {
                // The second half waits for the last setup(), so that its settings are seen to apply.
                if index == events / 2 { while setupsDone.current < 3 { usleep(1000) } }
                if index % 2 == 0 {
                    logger.info("t\(thread)-\(index)", userInfo: ["front": "facade"])
                } else {
                    swiftLog.info("t\(thread)-\(index)", metadata: ["front": "swift-log"])
                }
                if index == 0 { threadsLogging.withLock { $0 += 1 } }
            }
        }
    }
    // The first setup()'s settings are seen to apply too: the next setup() comes once every thread has logged under
    // it (on a loaded machine the threads may start later than 20 ms after being dispatched; none logged under phase
    // 0 then).
    while threadsLogging.current < threads { usleep(1000) }
    for phase in 1...3 {
        usleep(20_000)
        logger.defaultUserInfo = ["phase": phase]
        logger.logFileRetainedCount = 5 + phase
        logger.setup()
        setupsDone.withLock { $0 = phase }
    }
    group.wait()
    forceSendOrExit(logger, failure: "front-doors forceSend failed")
    FileHandle.standardOutput.write(Data("done\n".utf8))
}
