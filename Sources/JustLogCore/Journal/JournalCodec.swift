/// One log call as the journal holds it: the captured event, its place in its pipeline's order, and the prefix
/// of its `event_id`, so that a record rebuilt after a crash has the `event_id` it had (or would have had) in
/// the run that logged it.
struct JournalEntry: Sendable {
    var event: LogEvent
    var sequence: UInt64
    var eventIDPrefix: UInt64
}

/// An error already reduced to its ``ErrorChain``: what a journaled event carries, so that the chain is
/// captured once (on the caller's thread, where the error is alive) and rebuilt identically after a crash.
struct CapturedErrorChain: Error, Sendable {
    var chain: ErrorChain
}

/// The journal's binary form of a ``LogEvent``: little-endian integers, strings as a 32-bit length and UTF-8
/// bytes, values as a one-byte tag and their content. No JSON, no intermediate dictionaries: it is written
/// straight from the captured event on the caller's thread, and read back only after a crash.
///
/// ```text
/// version u8 · level u8 · sequence u64 · event-id prefix u64 · timestamp i64 (ns) · line u64
/// file str · function str · message str · userInfo map · metadata map · truncations (u32 n, n × str)
/// error u8 (0 none, 1 chain) · chain: links (u32 n, n × link) · truncations
/// link: domain str · code i64 · type str · description str · reason opt-str · suggestion opt-str · user info map
/// map: u32 n, n × (key str, value) · value: tag u8 (0 string … 7 object) and its content
/// ```
///
/// The spool's checksums tell a torn record from a whole one; ``decode(_:)`` still checks every length against
/// the bytes it has, so a record it cannot read is an error, never a crash.
enum JournalCodec {
    static let version: UInt8 = 1
    /// Where the sequence number sits in an encoded record: it is written when the record takes its place
    /// in order, under the pipeline's lock, after the rest was encoded outside it.
    static let sequenceOffset = 2
    /// Where the call site (line, file, function) starts: after the version, level, sequence, event-id prefix and
    /// timestamp.
    static let callSiteOffset = 26

    struct DecodingError: Error, CustomStringConvertible {
        var description: String
    }

    // MARK: - Encoding

    /// The journal record of `event`, its sequence number left to ``setSequence(_:in:)``. An error is reduced to
    /// its ``ErrorChain`` (within `errorLimits`) here, once, and the event carries the chain from then on, so that
    /// its record and the one rebuilt from the journal are the same.
    static func record(of event: inout LogEvent, eventIDPrefix: UInt64, errorLimits: CaptureLimits) -> [UInt8] {
        var chain: ErrorChain?
        if let error = event.error {
            let captured = (error as? CapturedErrorChain)?.chain ?? ErrorChain(error, limits: errorLimits)
            chain = captured
            event.error = CapturedErrorChain(chain: captured)
        }
        var record: [UInt8] = []
        record.reserveCapacity(160 + event.message.utf8.count + 48 * event.userInfo.count)
        encode(event, chain: chain, eventIDPrefix: eventIDPrefix, into: &record)
        return record
    }

    static func encode(
        _ event: LogEvent,
        chain: ErrorChain?,
        eventIDPrefix: UInt64,
        into buffer: inout [UInt8]
    ) {
        buffer.append(version)
        buffer.append(UInt8(event.level.rawValue))
        put(UInt64(0), into: &buffer)
        put(eventIDPrefix, into: &buffer)
        put(UInt64(bitPattern: event.timestamp.nanosecondsSinceEpoch), into: &buffer)
        put(UInt64(event.callSite.line), into: &buffer)
        put(event.callSite.file, into: &buffer)
        put(event.callSite.function, into: &buffer)
        put(event.message, into: &buffer)
        put(event.userInfo, into: &buffer)
        put(event.metadata, into: &buffer)
        put(event.truncations, into: &buffer)
        guard let chain else {
            buffer.append(0)
            return
        }
        buffer.append(1)
        put(UInt64(chain.links.count), into: &buffer)
        for link in chain.links {
            put(link.domain, into: &buffer)
            put(UInt64(bitPattern: Int64(link.code)), into: &buffer)
            put(link.type, into: &buffer)
            put(link.localizedDescription, into: &buffer)
            put(optional: link.failureReason, into: &buffer)
            put(optional: link.recoverySuggestion, into: &buffer)
            put(link.otherUserInfo, into: &buffer)
        }
        put(chain.truncations, into: &buffer)
    }

    /// Writes `sequence` into an encoded record.
    static func setSequence(_ sequence: UInt64, in buffer: inout [UInt8]) {
        for index in 0..<8 {
            buffer[sequenceOffset + index] = UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(index)))
        }
    }

    /// Writes `sequence` into a record encoded in place.
    static func setSequence(_ sequence: UInt64, in record: UnsafeMutableRawBufferPointer) {
        record.storeBytes(of: sequence.littleEndian, toByteOffset: sequenceOffset, as: UInt64.self)
    }

    private static func put(_ value: UInt64, into buffer: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    private static func put(_ string: String, into buffer: inout [UInt8]) {
        var string = string
        string.withUTF8 { bytes in
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: bytes.count).littleEndian) { buffer.append(contentsOf: $0) }
            buffer.append(contentsOf: bytes)
        }
    }

    private static func put(optional string: String?, into buffer: inout [UInt8]) {
        guard let string else {
            buffer.append(0)
            return
        }
        buffer.append(1)
        put(string, into: &buffer)
    }

    private static func put(_ strings: [String], into buffer: inout [UInt8]) {
        put(UInt64(strings.count), into: &buffer)
        for string in strings { put(string, into: &buffer) }
    }

    private static func put(_ map: [String: LogValue], into buffer: inout [UInt8]) {
        put(UInt64(map.count), into: &buffer)
        for (key, value) in map {
            put(key, into: &buffer)
            put(value, into: &buffer)
        }
    }

    private static func put(_ value: LogValue, into buffer: inout [UInt8]) {
        switch value {
        case .string(let string):
            buffer.append(0)
            put(string, into: &buffer)
        case .int(let int):
            buffer.append(1)
            put(UInt64(bitPattern: int), into: &buffer)
        case .uint(let uint):
            buffer.append(2)
            put(uint, into: &buffer)
        case .double(let double):
            buffer.append(3)
            put(double.bitPattern, into: &buffer)
        case .bool(let bool):
            buffer.append(bool ? 5 : 4)
        case .null:
            buffer.append(6)
        case .array(let elements):
            buffer.append(7)
            put(UInt64(elements.count), into: &buffer)
            for element in elements { put(element, into: &buffer) }
        case .object(let members):
            buffer.append(8)
            put(members, into: &buffer)
        }
    }

    // MARK: - Decoding

    /// Reads one record from the start of `bytes`; returns it and the number of bytes it took.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(DecodingError) -> (JournalEntry, consumed: Int) {
        var reader = Reader(bytes: bytes)
        let version = try reader.byte()
        guard version == Self.version else { throw DecodingError(description: "unknown record version \(version)") }
        guard let level = LogLevel(rawValue: Int(try reader.byte())) else {
            throw DecodingError(description: "unknown level")
        }
        let sequence = try reader.word()
        let prefix = try reader.word()
        let timestamp = LogTimestamp(nanosecondsSinceEpoch: Int64(bitPattern: try reader.word()))
        let line = try reader.word()
        let file = try reader.string()
        let function = try reader.string()
        let message = try reader.string()
        let userInfo = try reader.map()
        let metadata = try reader.map()
        let truncations = try reader.strings()
        var error: (any Error)?
        if try reader.byte() == 1 {
            let count = try reader.count()
            var links: [ErrorChain.Link] = []
            for _ in 0..<count {
                links.append(
                    ErrorChain.Link(
                        domain: try reader.string(),
                        code: Int(truncatingIfNeeded: Int64(bitPattern: try reader.word())),
                        type: try reader.string(),
                        localizedDescription: try reader.string(),
                        failureReason: try reader.optionalString(),
                        recoverySuggestion: try reader.optionalString(),
                        otherUserInfo: try reader.map()
                    )
                )
            }
            error = CapturedErrorChain(chain: ErrorChain(links: links, truncations: try reader.strings()))
        }
        let event = LogEvent(
            level: level,
            message: message,
            error: error,
            userInfo: userInfo,
            metadata: metadata,
            callSite: CallSite(file: file, function: function, line: UInt(truncatingIfNeeded: line)),
            timestamp: timestamp,
            truncations: truncations
        )
        return (JournalEntry(event: event, sequence: sequence, eventIDPrefix: prefix), reader.offset)
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0
        /// Values nest at most this deep (capture limits keep them far shallower).
        var depth = 0

        mutating func byte() throws(DecodingError) -> UInt8 {
            guard offset < bytes.count else { throw DecodingError(description: "record ends early") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func word() throws(DecodingError) -> UInt64 {
            guard bytes.count - offset >= 8 else { throw DecodingError(description: "record ends early") }
            var value: UInt64 = 0
            for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
            offset += 8
            return value
        }

        /// A count of items, each taking at least one byte: larger than what is left is damage.
        mutating func count() throws(DecodingError) -> Int {
            let count = try word()
            guard count <= UInt64(bytes.count - offset) else { throw DecodingError(description: "count too large") }
            return Int(count)
        }

        mutating func string() throws(DecodingError) -> String {
            guard bytes.count - offset >= 4 else { throw DecodingError(description: "record ends early") }
            var length = 0
            for index in 0..<4 { length |= Int(bytes[offset + index]) << (8 * index) }
            offset += 4
            guard length <= bytes.count - offset else { throw DecodingError(description: "string too long") }
            defer { offset += length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]), as: UTF8.self)
        }

        mutating func optionalString() throws(DecodingError) -> String? {
            try byte() == 1 ? try string() : nil
        }

        mutating func strings() throws(DecodingError) -> [String] {
            let count = try count()
            var strings: [String] = []
            strings.reserveCapacity(count)
            for _ in 0..<count { strings.append(try string()) }
            return strings
        }

        mutating func map() throws(DecodingError) -> [String: LogValue] {
            let count = try count()
            var map: [String: LogValue] = [:]
            map.reserveCapacity(count)
            for _ in 0..<count {
                let key = try string()
                map[key] = try value()
            }
            return map
        }

        mutating func value() throws(DecodingError) -> LogValue {
            depth += 1
            defer { depth -= 1 }
            guard depth <= 256 else { throw DecodingError(description: "values nested too deep") }
            switch try byte() {
            case 0: return .string(try string())
            case 1: return .int(Int64(bitPattern: try word()))
            case 2: return .uint(try word())
            case 3: return .double(Double(bitPattern: try word()))
            case 4: return .bool(false)
            case 5: return .bool(true)
            case 6: return .null
            case 7:
                let count = try count()
                var elements: [LogValue] = []
                elements.reserveCapacity(count)
                for _ in 0..<count { elements.append(try value()) }
                return .array(elements)
            case 8: return .object(try map())
            case let tag: throw DecodingError(description: "unknown value tag \(tag)")
            }
        }
    }
}
