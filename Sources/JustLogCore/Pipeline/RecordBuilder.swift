/// Turns a captured ``LogEvent`` into the ``LogRecord`` that destinations receive (the aggregated form).
///
/// `userInfo` is built in this order (SPEC §2):
/// 1. `defaultUserInfo`;
/// 2. the call's `userInfo` — a per-call key *replaces* a default key, as documented;
/// 3. `log_type`;
/// 4. the error's fields: `error_domain`, `error_code`, `NSLocalizedDescription`, `NSLocalizedFailureReason`,
///    `NSLocalizedRecoverySuggestion`, and the whole chain as `errors`;
/// 5. `truncated`, only when something was cut to keep the event within ``limits``: the message (cut here to
///    ``CaptureLimits/maximumMessageBytes``), the call's `userInfo` (cut when it was captured, see
///    ``LogEvent/truncations``) or the error chain's user infos.
///
/// Keys of steps 3–5 are JustLog's own. When the caller already used one of them, JustLog's value takes the
/// key and the caller's value is kept under `<key>_userInfo` (see ``KeyCollision``): nothing is dropped.
///
/// `metadata` holds the call's extra metadata, then `file`, `function`, `line`, `app_version`, `version`,
/// `device`, `timestamp` and `event_id`, with the same rule (`<key>_metadata` for a displaced extra).
public struct RecordBuilder: Sendable {
    public var defaultUserInfo: [String: LogValue]
    public var runtime: RuntimeInfo
    public var eventIDs: EventIDGenerator
    /// The message limit, and the limits of capturing an error chain's user infos.
    public var limits: CaptureLimits

    public init(
        defaultUserInfo: [String: LogValue] = [:],
        runtime: RuntimeInfo = .current,
        eventIDs: EventIDGenerator = EventIDGenerator(),
        limits: CaptureLimits = CaptureLimits()
    ) {
        self.defaultUserInfo = defaultUserInfo
        self.runtime = runtime
        self.eventIDs = eventIDs
        self.limits = limits
    }

    /// The record of `event`, the `sequence`-th event of the pipeline whose `event_id`s have the prefix
    /// `eventIDPrefix` (an event read back from the journal keeps the `event_id` it was given when it was logged).
    func record(for event: LogEvent, sequence: UInt64, eventIDPrefix: UInt64) -> LogRecord {
        guard eventIDs.prefix != eventIDPrefix else { return record(for: event, sequence: sequence) }
        var builder = self
        builder.eventIDs = EventIDGenerator(prefix: eventIDPrefix)
        return builder.record(for: event, sequence: sequence)
    }

    /// The record of `event`, the `sequence`-th event of its pipeline.
    public func record(for event: LogEvent, sequence: UInt64) -> LogRecord {
        var userInfo: [String: LogValue]
        if defaultUserInfo.isEmpty {
            userInfo = event.userInfo
            userInfo.reserveCapacity(event.userInfo.count + 1)
        } else {
            userInfo = defaultUserInfo
            userInfo.reserveCapacity(defaultUserInfo.count + event.userInfo.count + 1)
            userInfo.merge(event.userInfo) { _, call in call }
        }
        KeyCollision.insert(
            UserInfoKey.logType,
            .string(event.level.logType),
            into: &userInfo,
            displacedSuffix: "userInfo"
        )
        var truncations: [String] = []
        var message = event.message
        let messageBytes = message.utf8.count
        if messageBytes > limits.maximumMessageBytes {
            let kept = ValueCapture.prefix(message, maximumUTF8Count: limits.maximumMessageBytes)
            truncations.append(
                "message: kept \(kept.utf8.count) of \(messageBytes) bytes (limit \(limits.maximumMessageBytes))"
            )
            message = kept + ValueCapture.cutMarker
        }
        truncations += event.truncations
        if let error = event.error {
            let chain = (error as? CapturedErrorChain)?.chain ?? ErrorChain(error, limits: limits)
            for (key, value) in chain.topLevelFields {
                KeyCollision.insert(key, value, into: &userInfo, displacedSuffix: "userInfo")
            }
            KeyCollision.insert(UserInfoKey.errors, chain.errorsValue, into: &userInfo, displacedSuffix: "userInfo")
            truncations += chain.truncations
        }
        if !truncations.isEmpty {
            KeyCollision.insert(
                UserInfoKey.truncated,
                .string(truncations.joined(separator: "; ")),
                into: &userInfo,
                displacedSuffix: "userInfo"
            )
        }

        let eventID = eventIDs.id(for: sequence)
        var metadata = event.metadata
        metadata.reserveCapacity(event.metadata.count + 8)
        let own: [(String, LogValue)] = [
            (MetadataKey.file, .string(event.callSite.fileName)),
            (MetadataKey.function, .string(event.callSite.function)),
            (MetadataKey.line, .string(String(event.callSite.line))),
            (MetadataKey.appVersion, .string(runtime.appVersion)),
            (MetadataKey.version, .string(runtime.osVersion)),
            (MetadataKey.device, .string(runtime.device)),
            (MetadataKey.timestamp, .string(event.timestamp.rfc3339)),
            (MetadataKey.eventID, .string(eventID)),
        ]
        for (key, value) in own {
            KeyCollision.insert(key, value, into: &metadata, displacedSuffix: "metadata")
        }
        return LogRecord(
            level: event.level,
            message: message,
            userInfo: userInfo,
            metadata: metadata,
            timestamp: event.timestamp,
            eventID: eventID
        )
    }
}

/// The one rule for two values that want the same key: the first owner keeps its value under the key only
/// if it has precedence; the loser is kept under `<key>_<suffix>` (then `<key>_<suffix>_2`, `_3`, …).
public enum KeyCollision {
    /// Puts `value` under `key`; an existing different value there moves to a free renamed key.
    public static func insert(
        _ key: String,
        _ value: LogValue,
        into dictionary: inout [String: LogValue],
        displacedSuffix: String
    ) {
        // One hash lookup in the common case (no collision).
        if let existing = dictionary.updateValue(value, forKey: key), existing != value {
            dictionary[freeKey(for: key, suffix: displacedSuffix, in: dictionary)] = existing
        }
    }

    /// The first of `<key>_<suffix>`, `<key>_<suffix>_2`, … not yet used in `isTaken`.
    public static func freeKey(for key: String, suffix: String, isTaken: (String) -> Bool) -> String {
        var candidate = "\(key)_\(suffix)"
        var number = 2
        while isTaken(candidate) {
            candidate = "\(key)_\(suffix)_\(number)"
            number += 1
        }
        return candidate
    }

    static func freeKey(for key: String, suffix: String, in dictionary: [String: LogValue]) -> String {
        freeKey(for: key, suffix: suffix) { dictionary[$0] != nil }
    }
}
