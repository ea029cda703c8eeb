import Foundation
import JustLogCore

/// `exit-slow-destination FOLDER COUNT`: logs COUNT events to `child.log` through a destination that takes
/// 0.3 ms per record (a loaded machine, a slow disk), with an exit patience of 1 s — a third of the 3 s the
/// whole backlog of 10,000 needs at exit — and returns from main. The exit flush must wait while the destination
/// makes progress.
func exitWithSlowDestination(folder: String, count: String) {
    do {
        let file = try FileDestination(
            configuration: .init(url: URL(fileURLWithPath: folder).appendingPathComponent("child.log"))
        )
        let logger = StructuredLogger(
            configuration: .init(
                destinations: [.init(SlowDestination(file, delayPerRecord: 0.000_3))],
                pipeline: .init(exitFlushTimeout: 1)
            )
        )
        for index in 0..<(Int(count) ?? 0) {
            logger.info("child event \(index)", userInfo: ["index": index])
        }
        slowLogger = logger  // kept alive past main, as a logger stored in a global is
    } catch {
        FileHandle.standardError.write(Data("can't open the log file: \(error)\n".utf8))
        exit(1)
    }
}

nonisolated(unsafe) var slowLogger: StructuredLogger?

/// Forwards to another destination after sleeping `delayPerRecord` seconds per record.
final class SlowDestination: LogDestination {
    let next: any LogDestination
    let delayPerRecord: Double

    init(_ next: any LogDestination, delayPerRecord: Double) {
        self.next = next
        self.delayPerRecord = delayPerRecord
    }

    func write(_ batch: LogBatch) {
        Thread.sleep(forTimeInterval: delayPerRecord * Double(batch.records.count))
        next.write(batch)
    }

    func flush(completion: @escaping @Sendable ((any Error)?) -> Void) { next.flush(completion: completion) }
    func shutdown() { next.shutdown() }
}

/// `exit-from-destination`: a destination calls `exit(3)` on its first write, with an exit patience of an hour; the
/// exit flush must not wait for the pipeline whose own thread is exiting (it can't write meanwhile), and says what
/// it left.
func exitFromDestination() -> Never {
    let logger = StructuredLogger(
        configuration: .init(
            destinations: [.init(ExitingDestination())],
            pipeline: .init(exitFlushTimeout: 3_600)
        )
    )
    for index in 0..<100 {
        logger.info("child event \(index)")
    }
    exitingLogger = logger
    while true { Thread.sleep(forTimeInterval: 3_600) }
}

nonisolated(unsafe) var exitingLogger: StructuredLogger?

/// Calls `exit(3)` on its first write.
final class ExitingDestination: LogDestination {
    func write(_ batch: LogBatch) { exit(3) }
}
