import Foundation
import JustLog

// The README's Swift snippets, verbatim (ReadmeSnippetTests checks that each README block appears here or in
// DocumentedAPITests.swift, line for line), inside functions so that they compile with the tests. Free names of
// a snippet are the function's parameters. The swift-log snippet is in ReadmeSwiftLogSnippet.swift: with
// `import Logging` in the same file, the other snippets' `Logger` would be ambiguous.

/// "Without the singleton".
func readmeWithoutTheSingleton() async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("billing")
    let logger = Logger(configuration: .init(
        console: .init(minimumLevel: .warning),
        file: .init(url: folder.appendingPathComponent("billing.log"), minimumLevel: .debug),
        defaultUserInfo: ["app": "billing", "environment": "production"],
        sanitizer: { record in
            if record.userInfo["email"] != nil { record.userInfo["email"] = "<redacted>" }
        }
    ))
    logger.info("charged", userInfo: ["amount": 12.5, "currency": "GBP"])
    try await logger.flush()
    await logger.shutdown()
}

/// "Private values" (compiled, not run: it changes `Logger.shared`).
func readmePrivateValues(userEmail: String) {
    Logger.shared.privacy = .redacted                                  // "<private>"
    Logger.shared.privacy = .hashed(key: Array("secret key".utf8))     // "<private:3f1a…>", the same for the same value
    Logger.shared.info("signed in", userInfo: ["email": Sensitive(userEmail), "plan": "gold"])
}
