/// The aggregated form of a record (SPEC §2): exactly `message`, `metadata` and `userInfo`, in that order,
/// with every nested key in byte order, so that two runs diff cleanly.
///
/// ```swift
/// let json = String(decoding: AggregatedFormat.encode(record), as: UTF8.self)
/// // {"message":"a nice information","metadata":{…},"userInfo":{…}}
/// ```
public enum AggregatedFormat {
    public static let messageKey = "message"
    public static let metadataKey = "metadata"
    public static let userInfoKey = "userInfo"

    /// The aggregated JSON of `record`, as UTF-8 bytes.
    public static func encode(_ record: LogRecord) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256 + record.message.utf8.count)
        write(record, into: &out)
        return out
    }

    /// Appends the aggregated JSON of `record` to `out`.
    public static func write(_ record: LogRecord, into out: inout [UInt8]) {
        JSONWriter.writeObject(
            [
                (messageKey, .string(record.message)),
                (metadataKey, .object(record.metadata)),
                (userInfoKey, .object(record.userInfo)),
            ],
            into: &out
        )
    }
}
