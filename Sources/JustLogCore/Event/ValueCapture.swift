import Foundation

/// Turns the values of one log call into ``LogValue``s within ``CaptureLimits``, and says what it cut.
///
/// - **Never unbounded.** Arrays and objects deeper than ``CaptureLimits/maximumDepth`` become a marker string,
///   each object keeps at most ``CaptureLimits/maximumKeys`` members, each array or set at most
///   ``CaptureLimits/maximumElements`` elements, and the whole capture about ``CaptureLimits/maximumBytes``.
/// - **Never stuck in a cycle.** Foundation collections are walked element by element (see
///   ``FoundationContainer``), never bridged, and every collection object on the current path is remembered by
///   identity: one that holds itself, directly or through others, becomes `"<cycle: NSMutableArray>"`. A
///   collection met twice side by side is captured twice; only a way back up is a cycle.
/// - **The same in every run.** When a limit forces a choice, members are taken in byte order of their keys.
///   The common case pays nothing for this: a first pass takes members in the dictionary's own order and is
///   started again in key order only if it ran out of room.
/// - **Said, not silent.** Each cut is one line of ``truncations`` (`userInfo.tags: kept 1000 of 5000 elements
///   (limit 1000)`), at most ten, then a count; the record shows them as ``UserInfoKey/truncated``.
///
/// One value serves one event: its byte budget is shared by every capture made through it.
///
/// ```swift
/// var capture = ValueCapture(limits: CaptureLimits(maximumElements: 2))
/// let fields = capture.fields(["ids": [1, 2, 3]])   // ["ids": [1, 2]]
/// capture.truncations                               // ["userInfo.ids: kept 2 of 3 elements (limit 2)"]
/// ```
public struct ValueCapture {
    /// The limits this capture applies.
    public let limits: CaptureLimits
    /// What a ``Sensitive`` value becomes.
    public let privacy: PrivacyPolicy

    private var remainingBytes: Int
    /// Collection objects on the path from the captured root to the value being captured.
    private var enclosing = Set<ObjectIdentifier>()
    private var notes: [Note] = []
    private var omittedNotes = 0
    /// Members are taken in byte order of their keys (the second pass).
    private var ordered = false
    /// The first pass met a cut that depends on the order of members: it stops, and the capture starts again ordered.
    private var restart = false

    static let maximumNotes = 10
    static let cutMarker = "…[truncated]"

    public init(limits: CaptureLimits = CaptureLimits(), privacy: PrivacyPolicy = .default) {
        self.limits = limits
        self.privacy = privacy
        self.remainingBytes = limits.maximumBytes
    }

    /// What was cut so far, one line each, in byte order of where; empty when everything fitted.
    public var truncations: [String] {
        var lines = notes.map(\.text)
        if omittedNotes > 0 { lines.append("and \(omittedNotes) more cut(s)") }
        return lines
    }

    // MARK: - Entry points

    /// Captures a `userInfo` dictionary; `root` names it in ``truncations``.
    public mutating func fields(_ userInfo: [String: Any], at root: String = "userInfo") -> [String: LogValue] {
        fields(userInfo, of: nil, at: root)
    }

    /// Captures the `userInfo` of `owner` (an error), which counts as enclosing it: the owner found inside its own
    /// user info is a cycle.
    mutating func fields(_ userInfo: [String: Any], of owner: AnyObject?, at root: String) -> [String: LogValue] {
        let captured = capturingRoot(root) { capture in
            if let owner { capture.enclosing.insert(ObjectIdentifier(owner)) }
            return capture.object(userInfo, depth: 0) { capture, value, depth in capture.capture(value, depth: depth) }
        }
        guard case .object(let object) = captured else { return [:] }
        return object
    }

    /// Captures a `userInfo` already made of ``LogValue``s (a swift-log call's metadata): held to the same limits,
    /// which it escaped before (review, helper-62: a 5 MiB metadata string was kept whole, and a tree nested past
    /// the journal's reader's depth was lost at recovery).
    public mutating func fields(
        logValues userInfo: [String: LogValue],
        at root: String = "userInfo"
    ) -> [String: LogValue] {
        // The common case — a few flat members within every limit — is kept as it is: the same members a capture
        // keeps, charged the same, without copying the dictionary (an allocation a swift-log call).
        if let charged = flatCharge(of: userInfo), charged <= remainingBytes {
            remainingBytes -= charged
            return userInfo
        }
        let captured = capturingRoot(root) { capture in
            capture.object(userInfo, depth: 0) { capture, value, depth in capture.logValue(value, depth: depth) }
        }
        guard case .object(let object) = captured else { return [:] }
        return object
    }

    /// What capturing `userInfo` charges if it keeps it as it is — its keys, and each string or scalar (see `string`
    /// and `scalar`) — when that is the question: no more members than ``CaptureLimits/maximumKeys``, none an array or
    /// an object, no double that is not finite; `nil` otherwise. Kept as it is when the charge fits the bytes left.
    private func flatCharge(of userInfo: [String: LogValue]) -> Int? {
        guard userInfo.count <= limits.maximumKeys else { return nil }
        var charged = 0
        for (key, value) in userInfo {
            switch value {
            case .array, .object: return nil
            case .double(let double) where !double.isFinite: return nil
            case .string(let text): charged += key.utf8.count + 4 + text.utf8.count + 2
            default: charged += key.utf8.count + 4 + 8
            }
        }
        return charged
    }

    /// Captures one value; `root` names it in ``truncations``.
    public mutating func value(_ value: Any, at root: String = "value") -> LogValue {
        capturingRoot(root) { capture in capture.capture(value, depth: 0) }
    }

    /// Runs `body` once in the dictionaries' own order and, if that cut anything for lack of room, once more in
    /// key order from the same starting point; then names the new notes from `root`.
    private mutating func capturingRoot(_ root: String, _ body: (inout ValueCapture) -> LogValue) -> LogValue {
        let start = (remainingBytes: remainingBytes, notes: notes.count, omittedNotes: omittedNotes)
        var result = body(&self)
        if restart {
            remainingBytes = start.remainingBytes
            notes.removeSubrange(start.notes...)
            omittedNotes = start.omittedNotes
            ordered = true
            restart = false
            result = body(&self)
            ordered = false
        }
        enclosing.removeAll()
        for index in notes.indices.dropFirst(start.notes) { notes[index].name(from: root) }
        notes[start.notes...].sort(by: Note.precedes)
        return result
    }

    // MARK: - Values

    /// A private value: captured like any other (within the same limits), then replaced as the policy says — here,
    /// on the caller's thread, so the clear value goes no further.
    private mutating func sensitive(_ value: Sensitive, depth: Int) -> LogValue {
        if privacy.mode == .redact { return scalar(.string(PrivacyPolicy.redactionMarker)) }
        return privacy.apply(to: capture(value.value, depth: depth))
    }

    private mutating func capture(_ value: Any, depth: Int) -> LogValue {
        // The common types first: each failed cast of an `Any` costs tens of nanoseconds on the caller's thread.
        switch value {
        case let value as String: return string(value)
        case let int as Int:
            // Only an `Int` is surely a number: an `NSNumber` boolean (a decoded JSON's, an `NSError`'s user info),
            // held here or in an optional, casts to 1 or 0 (review, helper-63).
            if type(of: value) != Int.self, let bool = Self.boolean(in: value) { return scalar(.bool(bool)) }
            return scalar(.int(Int64(int)))
        case let value as Double: return scalar(Self.finite(value))
        case let value as Bool: return scalar(.bool(value))
        case let value as LogValue: return logValue(value, depth: depth)
        case let value as Sensitive: return sensitive(value, depth: depth)
        case let value as Substring: return string(String(value))
        case let value as Character: return string(String(value))
        case let value as Int8: return scalar(.int(Int64(value)))
        case let value as Int16: return scalar(.int(Int64(value)))
        case let value as Int32: return scalar(.int(Int64(value)))
        case let value as Int64: return scalar(.int(value))
        case let value as UInt: return scalar(.uint(UInt64(value)))
        case let value as UInt8: return scalar(.uint(UInt64(value)))
        case let value as UInt16: return scalar(.uint(UInt64(value)))
        case let value as UInt32: return scalar(.uint(UInt64(value)))
        case let value as UInt64: return scalar(.uint(value))
        case let value as Float: return scalar(Self.finite(LogValue.double(value)))
        case let value as Date: return string(Self.rfc3339(value))
        case let value as Data: return data(value)
        case let value as URL: return string(value.absoluteString)
        case let value as UUID: return string(value.uuidString)
        case let value as Decimal: return string(value.description)
        case is NSNull: return scalar(.null)
        case let value as any Error: return error(value, depth: depth)
        default: break
        }
        // Wrappers first: a cast to a Swift collection looks through them and would bridge what they hold.
        if let optional = value as? any OptionalValue {
            guard let wrapped = optional.wrappedValue else { return scalar(.null) }
            return capture(wrapped, depth: depth)
        }
        if type(of: value) == AnyHashable.self, let hashable = value as? AnyHashable {
            return capture(hashable.base, depth: depth)
        }
        // Objects before any cast to a Swift collection: that cast would bridge a Foundation collection whole.
        if type(of: value) is AnyClass {
            let object = value as AnyObject
            if let container = FoundationContainer(object) { return foundation(container, depth: depth) }
        }
        switch value {
        case let value as [String: Any]:
            return nested(value, depth: depth) { capture, depth in
                capture.object(value, depth: depth) { capture, value, depth in capture.capture(value, depth: depth) }
            }
        case let value as [AnyHashable: Any]:
            return nested(value, depth: depth) { capture, depth in
                let members = value.map {
                    (key: Self.describe($0.key.base), value: $0.value, original: $0.key.base)
                }
                return capture.object(Self.distinctKeys(members), depth: depth) {
                    capture,
                    value,
                    depth in
                    capture.capture(value, depth: depth)
                }
            }
        case let value as [Any]:
            return nested(value, depth: depth) { capture, depth in
                capture.array(value, depth: depth) { capture, value, depth in capture.capture(value, depth: depth) }
            }
        default:
            break
        }
        // Sets and other collections are reached through reflection.
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .set, .collection:
            return nested(value, depth: depth) { capture, depth in
                capture.array(mirror.children.lazy.map(\.value), count: mirror.children.count, depth: depth) {
                    capture,
                    value,
                    depth in
                    capture.capture(value, depth: depth)
                }
            }
        default:
            return string(Self.describe(value))
        }
    }

    /// A value that is already a ``LogValue``: checked against the same limits (it may be just as deep or big).
    private mutating func logValue(_ value: LogValue, depth: Int) -> LogValue {
        switch value {
        case .string(let text):
            return string(text)
        case .double(let double):
            return scalar(Self.finite(double))
        case .array(let elements):
            return nested(elements, depth: depth) { capture, depth in
                capture.array(elements, depth: depth) { capture, value, depth in capture.logValue(value, depth: depth) }
            }
        case .object(let object):
            return nested(object, depth: depth) { capture, depth in
                capture.object(object, depth: depth) { capture, value, depth in capture.logValue(value, depth: depth) }
            }
        case .int, .uint, .bool, .null:
            return scalar(value)
        }
    }

    private mutating func foundation(_ container: FoundationContainer, depth: Int) -> LogValue {
        nested(container.object, depth: depth) { capture, depth in
            switch container.kind {
            case .array, .orderedSet, .set:
                let limit = capture.limits.maximumElements
                return capture.array(container.elements(limit: limit), count: container.count, depth: depth) {
                    capture,
                    element,
                    depth in
                    capture.element(element, depth: depth)
                }
            case .dictionary:
                let members = container.members().map {
                    (key: Self.describe($0.key), value: $0.value, original: $0.key)
                }
                return capture.object(Self.distinctKeys(members), depth: depth) { capture, element, depth in
                    capture.element(element, depth: depth)
                }
            }
        }
    }

    /// An object as a Foundation collection stores it: its booleans are `NSNumber`s that would otherwise read as 1 and 0.
    private mutating func element(_ element: Any, depth: Int) -> LogValue {
        if type(of: element) is AnyClass, let bool = Self.boolean(element as AnyObject) { return scalar(.bool(bool)) }
        return capture(element, depth: depth)
    }

    /// The value of `value` — or of the value an optional holds — if it is one of `NSNumber`'s two booleans.
    private static func boolean(in value: Any) -> Bool? {
        if let optional = value as? any OptionalValue {
            return optional.wrappedValue.flatMap { boolean(in: $0) }
        }
        return type(of: value) is AnyClass ? boolean(value as AnyObject) : nil
    }

    /// The value of `object` if it is one of `NSNumber`'s two booleans.
    private static func boolean(_ object: AnyObject) -> Bool? {
        guard let number = object as? NSNumber else { return nil }
        if number === NSNumber(value: true) { return true }
        if number === NSNumber(value: false) { return false }
        return nil
    }

    /// An error as its description. An `NSError` is described here, not by Foundation, whose description
    /// includes its user info unchecked: an error inside its own user info would never finish. Its user info is
    /// captured like any other (an error met inside itself is a cycle) and written as JSON.
    private mutating func error(_ error: any Error, depth: Int) -> LogValue {
        guard type(of: error) is AnyClass, let nsError = error as AnyObject as? NSError else {
            return string(String(describing: error))
        }
        return nested(nsError, depth: depth) { capture, depth in
            var text = "Error Domain=\(nsError.domain) Code=\(nsError.code) \"\(nsError.localizedDescription)\""
            let userInfo = nsError.userInfo
            if !userInfo.isEmpty {
                let captured = capture.object(userInfo, depth: depth) { capture, value, depth in
                    capture.capture(value, depth: depth)
                }
                text += " UserInfo=" + String(decoding: JSONWriter.encode(captured), as: UTF8.self)
            }
            return .string(text)
        }
    }

    // MARK: - Collections

    /// Captures a collection at `depth` through `body`, unless it is too deep or encloses itself.
    private mutating func nested(
        _ collection: Any,
        depth: Int,
        _ body: (inout ValueCapture, Int) -> LogValue
    ) -> LogValue {
        let object: AnyObject? = type(of: collection) is AnyClass ? collection as AnyObject : nil
        if let object, enclosing.contains(ObjectIdentifier(object)) {
            let type = String(describing: Swift.type(of: object))
            note("cycle (\(type))")
            return scalar(.string("<cycle: \(type)>"))
        }
        if depth >= limits.maximumDepth {
            note("nested deeper than \(limits.maximumDepth)")
            return scalar(
                .string("<nested deeper than \(limits.maximumDepth): \(String(describing: type(of: collection)))>")
            )
        }
        guard let object else { return body(&self, depth + 1) }
        enclosing.insert(ObjectIdentifier(object))
        defer { enclosing.remove(ObjectIdentifier(object)) }
        return body(&self, depth + 1)
    }

    /// Captures a dictionary. The common case — it fits, nothing in it is cut — costs what `mapValues` costs:
    /// the first pass keeps the dictionary's own layout and, should anything be cut after all, starts again in key
    /// order, where each member is taken by name.
    private mutating func object<Value>(
        _ dictionary: [String: Value],
        depth: Int,
        _ child: (inout ValueCapture, Value, Int) -> LogValue
    ) -> LogValue {
        let limit = limits.maximumKeys
        if dictionary.count > limit {
            let chosen = Self.firstKeys(limit, of: dictionary.keys).map {
                (key: dictionary[$0].key, value: dictionary[$0].value)
            }
            return members(chosen, total: dictionary.count, depth: depth, child)
        }
        if ordered {
            return members(
                dictionary.sorted { UTF8Order.precedes($0.key, $1.key) },
                total: dictionary.count,
                depth: depth,
                child
            )
        }
        for key in dictionary.keys { remainingBytes -= key.utf8.count + 4 }
        let notesBefore = notes.count
        let captured = dictionary.mapValues { value in restart ? LogValue.null : child(&self, value, depth) }
        if remainingBytes < 0 || notes.count > notesBefore {
            // Out of room, or something inside was cut (its note needs the key): again, member by member, in key order.
            restart = true
        }
        return .object(captured)
    }

    /// Captures members given as pairs (keys made from a Foundation dictionary's or an `AnyHashable`'s).
    private mutating func object<Value>(
        _ pairs: [(key: String, value: Value)],
        depth: Int,
        _ child: (inout ValueCapture, Value, Int) -> LogValue
    ) -> LogValue {
        let limit = limits.maximumKeys
        if pairs.count > limit {
            return members(
                Self.firstKeys(limit, of: pairs.lazy.map(\.key)).map { pairs[$0] },
                total: pairs.count,
                depth: depth,
                child
            )
        }
        if ordered {
            return members(pairs.sorted { UTF8Order.precedes($0.key, $1.key) }, total: pairs.count, depth: depth, child)
        }
        return members(pairs, total: pairs.count, depth: depth, child)
    }

    /// Captures the chosen members of an object of `total` (at most ``CaptureLimits/maximumKeys``, the first in
    /// byte order of their keys when not all can be kept), in the given order while there is room.
    private mutating func members<Members: Sequence, Value>(
        _ chosen: Members,
        total: Int,
        depth: Int,
        _ child: (inout ValueCapture, Value, Int) -> LogValue
    ) -> LogValue where Members.Element == (key: String, value: Value) {
        let limit = limits.maximumKeys
        var result: [String: LogValue] = [:]
        result.reserveCapacity(min(total, limit))
        let kept = take(chosen, into: &result, depth: depth, child)
        if restart { return .null }
        if kept < min(total, limit) {
            if cutForSize() { note("kept \(kept) of \(total) keys" + sizeLimit) }
        } else if total > limit {
            note("kept \(kept) of \(total) keys (limit \(limit))")
        }
        return .object(result)
    }

    /// Takes members in the given order while there is room; returns how many.
    private mutating func take<Members: Sequence, Value>(
        _ members: Members,
        into result: inout [String: LogValue],
        depth: Int,
        _ child: (inout ValueCapture, Value, Int) -> LogValue
    ) -> Int where Members.Element == (key: String, value: Value) {
        var kept = 0
        for (key, value) in members {
            // A member whose key alone does not fit is not kept: keys are never cut.
            let keyBytes = key.utf8.count + 4
            guard keyBytes < remainingBytes else { break }
            remainingBytes -= keyBytes
            let notesBefore = notes.count
            let captured = child(&self, value, depth)
            if restart { break }
            path(.key(key), since: notesBefore)
            result[key] = captured
            kept += 1
        }
        return kept
    }

    /// Captures the first ``CaptureLimits/maximumElements`` elements of an array, in order, while there is room.
    private mutating func array<Elements: Collection, Value>(
        _ elements: Elements,
        count: Int? = nil,
        depth: Int,
        _ child: (inout ValueCapture, Value, Int) -> LogValue
    ) -> LogValue where Elements.Element == Value {
        let total = count ?? elements.count
        let limit = limits.maximumElements
        var result: [LogValue] = []
        result.reserveCapacity(min(total, limit))
        for element in elements.prefix(limit) {
            guard remainingBytes > 0 else { break }
            remainingBytes -= 1
            let notesBefore = notes.count
            let captured = child(&self, element, depth)
            if restart { return .null }
            path(.index(result.count), since: notesBefore)
            result.append(captured)
        }
        if result.count < min(total, limit) {
            if cutForSize() { note("kept \(result.count) of \(total) elements" + sizeLimit) }
        } else if total > limit {
            note("kept \(result.count) of \(total) elements (limit \(limit))")
        }
        return .array(result)
    }

    // MARK: - Scalars and the byte budget

    private mutating func scalar(_ value: LogValue) -> LogValue {
        remainingBytes -= 8
        return value
    }

    /// A string, cut to the room left (at a character boundary) if it does not fit.
    private mutating func string(_ text: String) -> LogValue {
        let count = text.utf8.count
        if count + 2 <= remainingBytes {
            remainingBytes -= count + 2
            return .string(text)
        }
        guard cutForSize() else { return .null }
        let kept = Self.prefix(text, maximumUTF8Count: max(0, remainingBytes - 2))
        note("kept \(kept.utf8.count) of \(count) bytes" + sizeLimit)
        remainingBytes = 0
        return .string(kept + Self.cutMarker)
    }

    /// Data as `"<N bytes: base64>"`; only as much as fits is encoded.
    private mutating func data(_ data: Data) -> LogValue {
        let encodedCount = (data.count + 2) / 3 * 4
        if encodedCount + 32 <= remainingBytes { return string("<\(data.count) bytes: \(data.base64EncodedString())>") }
        guard cutForSize() else { return .null }
        let kept = max(0, remainingBytes - 32) / 4 * 3
        note("kept \(kept) of \(data.count) bytes of data" + sizeLimit)
        remainingBytes = 0
        return .string("<\(data.count) bytes: \(data.prefix(kept).base64EncodedString())\(Self.cutMarker)>")
    }

    /// Whether to cut for lack of room now. Not in the first pass: what is cut there depends on the order
    /// members were met in, so the capture starts again in key order.
    private mutating func cutForSize() -> Bool {
        if !ordered { restart = true }
        return ordered
    }

    private var sizeLimit: String { " (size limit \(limits.maximumBytes) bytes)" }

    // MARK: - Notes

    private enum PathComponent {
        case key(String)
        case index(Int)
    }

    private struct Note {
        /// Innermost first: each enclosing collection adds its component on the way out.
        var reversedPath: [PathComponent] = []
        /// Where the cut is, once named from its root: `userInfo.a[2]`.
        var path = ""
        var what: String

        /// `userInfo.a[2]: kept 1000 of 5000 elements (limit 1000)`
        var text: String { path + ": " + what }

        mutating func name(from root: String) {
            path = root
            for component in reversedPath.reversed() {
                switch component {
                case .key(let key): path += "." + key
                case .index(let index): path += "[\(index)]"
                }
            }
            reversedPath = []
        }

        /// Byte order of the paths (a collection's own cut before those inside it), then of what was cut.
        static func precedes(_ lhs: Note, _ rhs: Note) -> Bool {
            lhs.path == rhs.path
                ? lhs.what.utf8.lexicographicallyPrecedes(rhs.what.utf8)
                : lhs.path.utf8.lexicographicallyPrecedes(rhs.path.utf8)
        }
    }

    /// Records a cut. Past ``maximumNotes`` only a count is kept; which notes are kept then depends on the order
    /// members were met in, so the first pass starts again in key order.
    private mutating func note(_ text: String) {
        if notes.count < Self.maximumNotes {
            notes.append(Note(what: text))
        } else if ordered {
            omittedNotes += 1
        } else {
            restart = true
        }
    }

    /// Adds `component` to the paths of the notes made since `index`.
    private mutating func path(_ component: PathComponent, since index: Int) {
        guard notes.count > index else { return }
        for note in index..<notes.count { notes[note].reversedPath.append(component) }
    }

    // MARK: - Helpers

    /// `date` in RFC 3339 UTC with milliseconds — also outside the years a ``LogTimestamp`` holds (1677–2262;
    /// `Date.distantFuture` is 4001: a trap before, review helper-48). An infinite or NaN interval, or one past any
    /// calendar `gmtime` knows, is said as a number of seconds.
    static func rfc3339(_ date: Date) -> String {
        if let timestamp = LogTimestamp(exactly: date) { return timestamp.rfc3339 }
        let interval = date.timeIntervalSince1970
        guard interval.isFinite, abs(interval) < 1e15 else {
            return "\(interval) s since 1970-01-01T00:00:00Z"
        }
        let seconds = interval.rounded(.down)
        let millis = Int(((interval - seconds) * 1_000).rounded(.down))
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(interval) s since 1970-01-01T00:00:00Z" }
        return String(
            format: "%04ld-%02ld-%02ldT%02ld:%02ld:%02ld.%03ldZ",
            Int(parts.tm_year) + 1900,
            Int(parts.tm_mon) + 1,
            Int(parts.tm_mday),
            Int(parts.tm_hour),
            Int(parts.tm_min),
            Int(parts.tm_sec),
            millis
        )
    }

    static func finite(_ value: Double) -> LogValue {
        if value.isNaN { return .string("NaN") }
        if value.isInfinite { return .string(value < 0 ? "-Infinity" : "Infinity") }
        return .double(value)
    }

    /// A readable string for anything that is not captured as a structure; collections and errors are named
    /// rather than described (their descriptions do not stop at cycles).
    /// The members of a dictionary whose keys were made text, each under a key of its own: keys of other types that
    /// print the same — `1` and `"1"` — are all kept, the first in order of its key's type name under the text, the
    /// others under `<text>_2`, `<text>_3`, … (names not taken). Before, the last one written won, and which one that
    /// was changed from run to run with the dictionary's hash order (review, helper-63).
    static func distinctKeys<Value>(
        _ members: [(key: String, value: Value, original: Any)]
    ) -> [(key: String, value: Value)] {
        var seen = Set<String>(minimumCapacity: members.count)
        guard members.contains(where: { !seen.insert($0.key).inserted }) else {
            return members.map { (key: $0.key, value: $0.value) }
        }
        var taken = Set(members.map(\.key))
        var previous: String?
        func typeName(_ key: Any) -> String { "\(type(of: key))" }
        return members.sorted { ($0.key, typeName($0.original)) < ($1.key, typeName($1.original)) }.map { member in
            guard member.key == previous else {
                previous = member.key
                return (key: member.key, value: member.value)
            }
            var number = 2
            while taken.contains("\(member.key)_\(number)") { number += 1 }
            let renamed = "\(member.key)_\(number)"
            taken.insert(renamed)
            return (key: renamed, value: member.value)
        }
    }

    static func describe(_ value: Any) -> String {
        if let string = value as? String { return string }
        if type(of: value) is AnyClass {
            let object = value as AnyObject
            if FoundationContainer(object) != nil || object is NSError {
                return "<\(String(describing: type(of: object)))>"
            }
        }
        return String(describing: value)
    }

    /// The longest prefix of `text` with at most `maximumUTF8Count` UTF-8 bytes that ends between two Unicode
    /// scalars: found in constant time, copied once.
    static func prefix(_ text: String, maximumUTF8Count: Int) -> String {
        let utf8 = text.utf8
        guard utf8.count > maximumUTF8Count else { return text }
        var end = utf8.index(utf8.startIndex, offsetBy: maximumUTF8Count)
        while end > utf8.startIndex, UTF8.isContinuation(utf8[end]) { end = utf8.index(before: end) }
        return String(text[..<end])
    }

    /// The indices of the `count` first keys in byte order, in that order: one pass that keeps the smallest keys
    /// in a max-heap (a key past the largest kept costs one comparison), then a sort of those alone.
    static func firstKeys<Keys: Collection>(_ count: Int, of keys: Keys) -> [Keys.Index] where Keys.Element == String {
        guard count > 0 else { return [] }
        var heap: [(key: String, index: Keys.Index)] = []
        heap.reserveCapacity(count)
        func larger(_ lhs: Int, _ rhs: Int) -> Bool { UTF8Order.precedes(heap[rhs].key, heap[lhs].key) }
        var index = keys.startIndex
        while index != keys.endIndex {
            let key = keys[index]
            if heap.count < count {
                heap.append((key, index))
                var child = heap.count - 1
                while child > 0, larger(child, (child - 1) / 2) {
                    heap.swapAt(child, (child - 1) / 2)
                    child = (child - 1) / 2
                }
            } else if UTF8Order.precedes(key, heap[0].key) {
                heap[0] = (key, index)
                var parent = 0
                while true {
                    var largest = parent
                    let left = 2 * parent + 1
                    let right = left + 1
                    if left < heap.count, larger(left, largest) { largest = left }
                    if right < heap.count, larger(right, largest) { largest = right }
                    if largest == parent { break }
                    heap.swapAt(parent, largest)
                    parent = largest
                }
            }
            keys.formIndex(after: &index)
        }
        heap.sort { UTF8Order.precedes($0.key, $1.key) }
        return heap.map(\.index)
    }
}

/// An `Optional` of any type, to look inside it.
private protocol OptionalValue {
    var wrappedValue: Any? { get }
}

extension Optional: OptionalValue {
    fileprivate var wrappedValue: Any? { map { $0 as Any } }
}
