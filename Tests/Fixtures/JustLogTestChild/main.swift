// A program that logs and simply returns from `main` — no flush, no shutdown — as a user's would.
// Used by the child-process tests: `JustLogTestChild exit-without-flush FOLDER COUNT`.
import Foundation
import JustLog

let arguments = CommandLine.arguments
guard arguments.count >= 4, let count = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: JustLogTestChild exit-without-flush|exit-call FOLDER COUNT\n".utf8))
    exit(2)
}
let logger = Logger.shared
logger.baseUrlForFileLogging = URL(fileURLWithPath: arguments[2], isDirectory: true)
logger.logFilename = "child.log"
logger.enableConsoleLogging = false
logger.setup()
for index in 0..<count {
    logger.info("child event \(index)", userInfo: ["index": index])
}
if arguments[1] == "exit-call" {
    exit(0)
}
