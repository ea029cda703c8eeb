// swift-format-ignore-file
// (the README's and SPEC's snippets, verbatim: ReadmeSnippetTests compares them line by line)
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

/// "Typed fields" (compiled, not run: it logs through `Logger.shared`).
func readmeTypedFields(userID: Int, plan: String) {
    Logger.shared.info("user signed in", fields: ["userID": LogValue(userID), "plan": .string(plan), "attempt": 1])
}

/// "Delivery to Logstash" (compiled, not run: it names collectors that don't exist here).
func readmeDeliveryToLogstash() throws {
    // Logger.shared: logger.logstashTransport = .beats; an immutable configuration:
    var logstash = Logger.Configuration.Logstash(host: "logstash.example.com", port: 5044)
    logstash.transport = .beats                       // or .beats(.init(compressionLevel: 6, maxWindow: 4096))

    // The destination directly, with collectors to fail over to (tried in order; the next one when a
    // connect fails — at once, backing off only once every host has failed —, a connection is lost, or the
    // collector stops reading — json_lines: no write taken within `writeTimeout`, 30 s; activity lines name
    // each host)
    var client = LogstashClient.Configuration(hosts: [.init(host: "logstash-a", port: 5044), .init(host: "logstash-b", port: 5044)])
    client.transport = .beats
    client.loadBalance = true   // Beats: a connection to each host at once, each with its own window and ACKs
    let destination = try LogstashDestination(configuration: .init(client: client, spoolDirectory: "/var/cache/app/app.log.spool"))
    _ = (logstash, destination)
}
