/// Makes the `event_id` of each record: a random 64-bit prefix chosen once per pipeline, and the event's
/// sequence number in that pipeline, as a UUID-shaped string (`3f2a9c1d-8e7b-4a60-0000-000000000001`).
///
/// Unique per event without a random draw per call; the prefix makes ids from two runs (or two
/// processes) distinct with overwhelming probability. Collectors use it to drop duplicates.
public struct EventIDGenerator: Sendable {
    public let prefix: UInt64

    /// A generator with a random prefix.
    public init() {
        var generator = SystemRandomNumberGenerator()
        self.prefix = generator.next()
    }

    /// A generator with a fixed prefix, for tests.
    public init(prefix: UInt64) {
        self.prefix = prefix
    }

    /// The id of the event with sequence number `sequence`.
    public func id(for sequence: UInt64) -> String {
        var bytes = [UInt8](repeating: 0, count: 36)
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var position = 0
        func put(_ value: UInt64, nibbles: Int) {
            for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                bytes[position] = digits[Int((value >> UInt64(shift)) & 0xF)]
                position += 1
            }
        }
        func dash() {
            bytes[position] = UInt8(ascii: "-")
            position += 1
        }
        put(prefix >> 32, nibbles: 8)
        dash()
        put((prefix >> 16) & 0xFFFF, nibbles: 4)
        dash()
        put(prefix & 0xFFFF, nibbles: 4)
        dash()
        put(sequence >> 48, nibbles: 4)
        dash()
        put(sequence & 0xFFFF_FFFF_FFFF, nibbles: 12)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The prefix and sequence number an id of this generator's form was made of, or `nil` for another form.
    public static func components(of id: String) -> (prefix: UInt64, sequence: UInt64)? {
        let bytes = Array(id.utf8)
        guard bytes.count == 36 else { return nil }
        var prefix: UInt64 = 0
        var sequence: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
            if index < 18 {
                prefix = prefix << 4 | nibble
            } else {
                sequence = sequence << 4 | nibble
            }
        }
        return (prefix, sequence)
    }
}
