/// What ``Spool/measureAppend(records:payloadBytes:directory:)`` measured (a test and benchmark helper,
/// `package` so that it is no API of the library).
package struct SpoolAppendMeasurement: Sendable, CustomStringConvertible {
    /// Records appended.
    package var records: Int
    /// Payload size of each.
    package var payloadBytes: Int
    /// Time all appends took.
    package var elapsed: Duration

    /// Mean time per append, in nanoseconds.
    package var nanosecondsPerAppend: Double {
        let (seconds, attoseconds) = elapsed.components
        return (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(max(records, 1))
    }

    package var description: String {
        "\(records) appends of \(payloadBytes) bytes: \(Int(nanosecondsPerAppend)) ns/append"
    }
}

extension Spool {
    /// Appends `records` records of `payloadBytes` bytes to a new spool in `directory` (a folder that
    /// should be empty; the spool's files stay there) and returns the time taken. Run it in a release
    /// build to measure the cost a log call pays for the Logstash destination:
    ///
    /// ```swift
    /// let measurement = try Spool.measureAppend(records: 1_000_000, payloadBytes: 400, directory: "/tmp/bench")
    /// print(measurement) // "1000000 appends of 400 bytes: … ns/append"
    /// ```
    package static func measureAppend(
        records: Int,
        payloadBytes: Int,
        directory: String
    ) throws -> SpoolAppendMeasurement {
        // A cap big enough that nothing is dropped, segment creation included in the measurement.
        let spool = try Spool(
            configuration: .init(directory: directory, maxTotalBytes: max(64 << 20, 2 * records * (payloadBytes + 8)))
        )
        defer { spool.close() }
        let payload = [UInt8](repeating: UInt8(ascii: "x"), count: payloadBytes)
        let clock = ContinuousClock()
        let start = clock.now
        try payload.withUnsafeBytes { bytes in
            for _ in 0..<records { try spool.append(bytes) }
        }
        return SpoolAppendMeasurement(records: records, payloadBytes: payloadBytes, elapsed: clock.now - start)
    }
}
