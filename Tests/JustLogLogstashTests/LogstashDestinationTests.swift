import Foundation
import JustLogCore
import JustLogLogstash
import JustLogTestSupport
import Testing

@Suite struct LogstashDestinationTests {
    @Test func aSpoolCapSmallerThanTheResendWindowIsAClearError() throws {
        let directory = try TemporaryDirectory(prefix: "destination-cap")
        var configuration = LogstashDestination.Configuration(client: .init(host: "127.0.0.1", port: 9), spoolDirectory: directory.file("spool"))
        configuration.spool.maxTotalBytes = 8 << 20  // below the 16 MiB window + 2 × 4 MiB segments
        #expect {
            _ = try LogstashDestination(configuration: configuration)
        } throws: { error in
            (error as? LogstashError)?.code == .invalidConfiguration && "\(error)".contains("raise the spool capacity")
        }
    }

    @Test func anOversizedMessageIsTruncatedVisiblyAndKeepsACallersTruncatedBytesKey() throws {
        let directory = try TemporaryDirectory(prefix: "destination-truncate")
        var client = LogstashClient.Configuration(host: "127.0.0.1", port: 9)
        client.maxLineBytes = 4096
        client.useTLS = false
        var configuration = LogstashDestination.Configuration(client: client, spoolDirectory: directory.file("spool"))
        configuration.spool.segmentBytes = 1 << 20
        let destination = try LogstashDestination(configuration: configuration)
        let record = Fixtures.builder().record(
            for: Fixtures.event(.info, String(repeating: "é", count: 10_000), userInfo: ["truncated_bytes": "mine"]), sequence: 1
        )
        destination.write(LogBatch(records: [record]))
        let batch = destination.spool.read(from: destination.spool.cursor, maxBytes: 1 << 20, maxRecords: 10)
        destination.shutdown()
        let line = try #require(String(decoding: batch.bytes, as: UTF8.self).split(separator: "\n").first)
        #expect(line.utf8.count <= 4096)
        guard case .object(let object) = try JSONReader.parse(line) else { Issue.record("not an object"); return }
        #expect(object["message"]?.text.hasSuffix("…[truncated]") == true)
        #expect(object["truncated_bytes_userInfo"] == "mine", "the caller's key is kept, renamed")
        if case .int(let cut)? = object["truncated_bytes"] { #expect(cut > 10_000) } else { Issue.record("no truncated_bytes") }
    }
}
