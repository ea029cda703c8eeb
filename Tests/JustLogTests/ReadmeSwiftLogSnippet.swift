// swift-format-ignore-file
// (the README's and SPEC's snippets, verbatim: ReadmeSnippetTests compares them line by line)
import JustLog
import JustLogLogging
import Logging

/// The README's "swift-log" snippet, verbatim (compiled, not run: swift-log can be bootstrapped once per
/// process; FrontDoorTests runs the same bootstrap in a child process).
func readmeSwiftLog(cardNumber: String, requestID: String) {
    LoggingSystem.bootstrap(JustLogLogHandler.shared)
    JustLog.Logger.shared.setup()

    let log = Logging.Logger(label: "com.example.billing")
    log.info("charged", metadata: ["amount": "12.50", "card": "\(cardNumber, sensitivity: .sensitive)"])
    LoggingSystem.bootstrap(JustLogLogHandler.shared, metadataProvider: .init { ["request_id": "\(requestID)"] })
}
