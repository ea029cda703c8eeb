import Foundation
import JustLog
import JustLogCore
import JustLogLogstash
import JustLogReceivers
import JustLogTestSupport
import Testing

/// The facade's one Beats setting: `Logger.Configuration.Logstash.transport`.
@Suite struct BeatsFacadeTests {
    @Test func aLoggerWithTheBeatsTransportDeliversEveryEventAcknowledged() async throws {
        let tally = EventIDTally()
        let receiver = BeatsReceiver(configuration: .init(), handler: tally.record)
        let port = try await receiver.start()
        let folder = try TemporaryDirectory(prefix: "beats-facade")
        var logstash = Logger.Configuration.Logstash(
            host: "127.0.0.1",
            port: UInt16(port),
            sendInterval: 0.2,
            useTLS: false,
            spoolFolder: folder.url.appendingPathComponent("app.log.spool")
        )
        logstash.transport = .beats
        let logger = Logger(
            configuration: .init(console: nil, logstash: logstash, defaultUserInfo: ["app": "facade-test"])
        )
        for index in 0..<1000 {
            logger.info("facade \(index)", userInfo: ["index": index])
        }
        try await logger.flush()
        await logger.shutdown()
        await receiver.stop()
        #expect(tally.snapshot.uniqueEventIDs == 1000)
        #expect(tally.snapshot.duplicates == 0)
        #expect(receiver.counters.acknowledged >= 1000, "forceSend returned after the ACKs")
    }

    @Test func thePropertyStyleLoggerDeliversOverBeatsToo() async throws {
        let tally = EventIDTally()
        let receiver = BeatsReceiver(configuration: .init(), handler: tally.record)
        let port = try await receiver.start()
        let folder = try TemporaryDirectory(prefix: "beats-property")
        defer { folder.remove() }
        let logger = Logger()
        logger.baseUrlForFileLogging = folder.url
        logger.enableConsoleLogging = false
        logger.enableFileLogging = false
        logger.logstashHost = "127.0.0.1"
        logger.logstashPort = UInt16(port)
        logger.logstashUseTLS = false
        logger.logstashTimeout = 0.2
        logger.logstashTransport = .beats
        logger.setup()
        for index in 0..<500 { logger.info("property \(index)") }
        try await logger.flush()
        await logger.shutdown()
        await receiver.stop()
        #expect(tally.snapshot.uniqueEventIDs == 500)
        #expect(receiver.counters.acknowledged >= 500)
    }

    @Test func jsonLinesStaysTheDefault() {
        #expect(Logger.Configuration.Logstash(host: "h", port: 1).transport == .jsonLines)
        #expect(Logger().logstashTransport == .jsonLines)
        #expect(LogstashClient.Configuration(host: "h", port: 1).transport == .jsonLines)
    }
}
