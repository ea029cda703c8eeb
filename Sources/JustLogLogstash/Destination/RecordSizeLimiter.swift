import JustLogCore

/// Encodes a record in the flattened form and makes it fit the collector's line limit.
///
/// Collectors split (syslog-ng, rsyslog) or reject lines past their limit, silently. A record whose JSON is
/// longer than ``maximumBytes`` has its message shortened, at a character boundary, to fit, and gains
/// `"truncated_bytes"` (how many bytes of the message were cut) — so the loss is visible in Kibana. If the
/// `userInfo` alone is too large, it is replaced by `"truncated_userInfo_bytes"`.
struct RecordSizeLimiter: Sendable {
    let maximumBytes: Int

    /// The flattened JSON of `record` (with `token` if given), at most ``maximumBytes`` long.
    func encode(_ record: LogRecord, token: String?) -> [UInt8] {
        var record = record
        if let token {
            KeyCollision.insert("token", .string(token), into: &record.userInfo, displacedSuffix: "userInfo")
        }
        let encoded = FlattenedFormat.encode(record)
        if encoded.count <= maximumBytes { return encoded }

        // Cut the message by the excess (plus room for the marker and escapes), then check again.
        var excess = encoded.count - maximumBytes
        var cut = record
        for _ in 0..<4 {
            let messageBytes = Array(record.message.utf8)
            let keep = max(0, messageBytes.count - excess - 64)
            cut.message = Self.prefix(record.message, utf8Count: keep) + "…[truncated]"
            cut.userInfo = record.userInfo
            KeyCollision.insert(
                "truncated_bytes",
                .int(Int64(messageBytes.count - keep)),
                into: &cut.userInfo,
                displacedSuffix: "userInfo"
            )
            let attempt = FlattenedFormat.encode(cut)
            if attempt.count <= maximumBytes { return attempt }
            excess = attempt.count - maximumBytes + excess
        }
        // The rest of the record is too large on its own: keep the identity and say what was cut.
        let userInfoBytes = JSONWriter.encode(.object(record.userInfo)).count
        var minimal = LogRecord(
            level: record.level,
            message: Self.prefix(record.message, utf8Count: min(record.message.utf8.count, maximumBytes / 4))
                + "…[truncated]",
            userInfo: [
                "log_type": .string(record.level.logType), "truncated_userInfo_bytes": .int(Int64(userInfoBytes)),
            ],
            metadata: record.metadata.filter {
                ["timestamp", "event_id", "file", "function", "line"].contains($0.key)
            },
            timestamp: record.timestamp,
            eventID: record.eventID
        )
        if let token { minimal.userInfo["token"] = .string(token) }
        // Only a limit smaller than a bare record fails here; the spool then refuses it and the drop is counted.
        return FlattenedFormat.encode(minimal)
    }

    /// The longest prefix of `text` with at most `utf8Count` UTF-8 bytes that ends on a character boundary.
    static func prefix(_ text: String, utf8Count: Int) -> String {
        var count = 0
        var end = text.startIndex
        for index in text.indices {
            let width = text[index].utf8.count
            if count + width > utf8Count { break }
            count += width
            end = text.index(after: index)
        }
        return String(text[..<end])
    }
}
