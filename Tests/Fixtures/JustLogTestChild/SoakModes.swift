import Foundation
import JustLog
import JustLogCore

/// `soak FOLDER PORT RATE SECONDS`: logs "soak-<i>" at RATE events per second for SECONDS to `FOLDER/child.log`
/// (10 MiB files, enough of them kept for the whole run) and to Logstash (plain TCP, 127.0.0.1:PORT), printing
/// `rss <bytes> logged <n>` every second. At the end it `forceSend`s, retrying for up to 60 s while the
/// collector is restarted, prints `done <n>` and exits 0 (1 if delivery never completed).
func soak(folder: String, port: String, rate: String, seconds: String) -> Never {
    let url = URL(fileURLWithPath: folder).appendingPathComponent("child.log")
    let logger = Logger(
        configuration: .init(
            console: nil,
            file: .init(FileDestination.Configuration(url: url, maximumFileSize: 10 << 20, retainedFileCount: 1000)),
            logstash: .init(host: "127.0.0.1", port: UInt16(port) ?? 0, sendInterval: 0.2, useTLS: false)
        )
    )
    let rate = max(1, Int(rate) ?? 1000)
    let duration = Double(Int(seconds) ?? 60)
    let start = Date()
    var logged = 0
    var lastReport = 0
    while true {
        let elapsed = Date().timeIntervalSince(start)
        if elapsed >= duration { break }
        // Catch up to the fixed rate, then sleep a little: a steady load, not bursts of a second.
        let due = Int(elapsed * Double(rate))
        while logged < due {
            logger.info("soak-\(logged)", userInfo: ["index": logged, "payload": "0123456789abcdef"])
            logged += 1
        }
        if Int(elapsed) > lastReport {
            lastReport = Int(elapsed)
            FileHandle.standardOutput.write(Data("rss \(residentBytes()) logged \(logged)\n".utf8))
        }
        Thread.sleep(forTimeInterval: 0.005)
    }
    let deadline = Date().addingTimeInterval(60)
    while let message = forceSendError(logger) {
        if Date() > deadline {
            FileHandle.standardError.write(Data("soak: delivery did not complete: \(message)\n".utf8))
            exit(1)
        }
        Thread.sleep(forTimeInterval: 0.5)
    }
    FileHandle.standardOutput.write(Data("done \(logged)\n".utf8))
    exit(0)
}
