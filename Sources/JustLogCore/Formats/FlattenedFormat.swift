/// The flattened form of a record (SPEC §3): one JSON object with no nesting of `userInfo` or `metadata`,
/// the shape Logstash and Kibana expect. One object per line is the `json_lines` framing; the caller adds `\n`.
///
/// The rules, which make flattening deterministic and lossless:
/// 1. `@timestamp` is the time of the call (`metadata.timestamp`), then `message`.
/// 2. Then every `metadata` key except `timestamp` (so `event_id`, `file`, `function`, `line`, …).
/// 3. Then every `userInfo` key, in byte order. A nested object is flattened with dotted paths
///    (`{"user":{"id":1}}` → `"user.id":1`); an empty object stays `{}`; arrays stay JSON arrays.
/// 4. Precedence is that order: an earlier key keeps its name; a later one that collides is kept as
///    `<key>_metadata` or `<key>_userInfo` (then `_2`, `_3`, …). Nothing is dropped.
/// 5. `error_code` is a string at the top level (`"1234"`), so Elasticsearch maps it as one type whatever
///    the error; inside the `errors` array, codes stay numbers.
///
/// Members are written in byte order of their final keys.
///
/// ```swift
/// let line = FlattenedFormat.encode(record) + [UInt8(ascii: "\n")]
/// ```
public enum FlattenedFormat {
    public static let timestampKey = "@timestamp"

    /// The flattened members of `record`, in the order they are written.
    public static func members(of record: LogRecord) -> [(key: String, value: LogValue)] {
        // In precedence order: the rules above, applied by `resolve`.
        var candidates: [(key: String, value: LogValue, suffix: String)] = []
        candidates.reserveCapacity(record.metadata.count + record.userInfo.count + 2)
        func addFlattening(_ key: String, _ value: LogValue, suffix: String) {
            if case .object(let object) = value, !object.isEmpty {
                for nestedKey in object.keys.sorted(by: UTF8Order.precedes) {
                    addFlattening(key + "." + nestedKey, object[nestedKey]!, suffix: suffix)
                }
            } else {
                candidates.append((key, value, suffix))
            }
        }
        candidates.append(
            (timestampKey, record.metadata[MetadataKey.timestamp] ?? .string(record.timestamp.rfc3339), "metadata")
        )
        candidates.append((AggregatedFormat.messageKey, .string(record.message), "message"))
        for key in record.metadata.keys.sorted(by: UTF8Order.precedes) where key != MetadataKey.timestamp {
            addFlattening(key, record.metadata[key]!, suffix: "metadata")
        }
        for key in record.userInfo.keys.sorted(by: UTF8Order.precedes) {
            var value = record.userInfo[key]!
            if key == UserInfoKey.errorCode, case .int(let code) = value { value = .string(String(code)) }
            addFlattening(key, value, suffix: "userInfo")
        }
        return resolve(candidates)
    }

    /// Applies the precedence rule to candidates given in precedence order, and sorts by final key.
    ///
    /// Fast path: sort by key (stable, so precedence order is kept among equal keys); if no two neighbours
    /// share a key there is nothing to rename and no hashing is needed.
    static func resolve(
        _ candidates: [(key: String, value: LogValue, suffix: String)]
    ) -> [(key: String, value: LogValue)] {
        let ranked = candidates.enumerated().sorted { lhs, rhs in
            lhs.element.key == rhs.element.key
                ? lhs.offset < rhs.offset : UTF8Order.precedes(lhs.element.key, rhs.element.key)
        }
        var collides = false
        for index in ranked.indices.dropFirst() where ranked[index].element.key == ranked[index - 1].element.key {
            collides = true
            break
        }
        if !collides {
            return ranked.map { ($0.element.key, $0.element.value) }
        }
        // Collisions (rare): the first owner keeps the key, in precedence order; later ones are renamed — once every
        // key's owner has it: a renamed one took a caller's own key that collided with nothing (`file` from userInfo
        // became `file_userInfo`, and the caller's `file_userInfo` was pushed to `file_userInfo_userInfo`: review,
        // helper-63).
        var result: [String: LogValue] = [:]
        result.reserveCapacity(candidates.count)
        var renamed: [(key: String, value: LogValue, suffix: String)] = []
        for candidate in candidates {
            if result[candidate.key] == nil {
                result[candidate.key] = candidate.value
            } else {
                renamed.append(candidate)
            }
        }
        for candidate in renamed {
            result[KeyCollision.freeKey(for: candidate.key, suffix: candidate.suffix) { result[$0] != nil }] =
                candidate.value
        }
        return result.sorted { UTF8Order.precedes($0.key, $1.key) }
    }

    /// The flattened JSON of `record`, without the trailing newline.
    public static func encode(_ record: LogRecord) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(320 + record.message.utf8.count)
        JSONWriter.writeObject(members(of: record), into: &out)
        return out
    }
}
