/// A log call's journal record written straight from the caller's values — the fast lane of a journaled call.
///
/// The common call carries a message and a few plain values (`String`, `Int`, `Double`, `Bool`) that fit the
/// ``CaptureLimits``. For it, ``ValueCapture`` would build a `[String: LogValue]` that ``JournalCodec`` then
/// encodes and throws away: here the values are written into a stack buffer as they are met, with no dictionary,
/// no `LogEvent` and no allocation. The record is the one ``JournalCodec/encode(_:chain:eventIDPrefix:into:)``
/// writes for the same call (the tests compare what each decodes to).
///
/// Anything else — an error, a ``Sensitive`` or nested value, a Foundation object, values past a limit (their
/// cut is ``ValueCapture``'s to make and to note) — is not plain, and the call takes the full capture.
extension JournalCodec {
    /// Records up to this size are written on the stack (`withUnsafeTemporaryAllocation` allocates at most
    /// 1 KiB there without asking); a larger one is written again into a heap buffer of its exact size.
    static let callRecordStackBytes = 1024

    /// Encodes a call whose `userInfo` holds only plain values within `limits` and hands the record (sequence
    /// number 0, see ``setSequence(_:in:)``) to `body`; returns `body`'s answer, or `false` without calling it
    /// when the call needs the full capture.
    static func withCallRecord(
        level: LogLevel,
        message: String,
        userInfo: [String: Any]?,
        callSite: CallSite,
        timestamp: LogTimestamp,
        eventIDPrefix: UInt64,
        limits: CaptureLimits,
        _ body: (UnsafeMutableRawBufferPointer) -> Bool
    ) -> Bool {
        guard let userInfo, !userInfo.isEmpty else {
            // No members: no dictionary to walk (an empty one costs its iteration's set-up all the same).
            return withCallRecord(
                level: level,
                message: message,
                memberCount: 0,
                callSite: callSite,
                timestamp: timestamp,
                eventIDPrefix: eventIDPrefix,
                limits: limits,
                members: { _, _ in true },
                body
            )
        }
        // ValueCapture keeps at most `maximumKeys` members and about `maximumBytes`: keys at their length + 4,
        // strings at theirs + 2, other scalars at 8. Within both nothing is cut, and it keeps them as they are.
        guard userInfo.count <= limits.maximumKeys else { return false }
        return withCallRecord(
            level: level,
            message: message,
            memberCount: userInfo.count,
            callSite: callSite,
            timestamp: timestamp,
            eventIDPrefix: eventIDPrefix,
            limits: limits,
            members: { writer, budget in
                // Keys and values apart, each view in its order (the same): iterating pairs copies each
                // `(String, Any)` through the runtime, and subscripting by index checks every index.
                var keys = userInfo.keys.makeIterator()
                var values = userInfo.values.makeIterator()
                while let key = keys.next(), var value = values.next() {
                    budget -= key.utf8.count + 4
                    writer.string(key)
                    guard writer.plainValue(&value, budget: &budget), budget >= 0 else { return false }
                }
                return true
            },
            body
        )
    }

    /// Encodes a call whose typed `fields` hold only scalars within `limits`, as
    /// ``withCallRecord(level:message:userInfo:callSite:timestamp:eventIDPrefix:limits:_:)`` does a dictionary's:
    /// the same record as for a `userInfo` of the same values. `false` when the call needs the full capture: a
    /// nested value, a key given twice (the capture keeps the last), values past a limit.
    static func withCallRecord(
        level: LogLevel,
        message: String,
        fields: KeyValuePairs<String, LogValue>,
        callSite: CallSite,
        timestamp: LogTimestamp,
        eventIDPrefix: UInt64,
        limits: CaptureLimits,
        _ body: (UnsafeMutableRawBufferPointer) -> Bool
    ) -> Bool {
        let count = fields.count
        guard count <= limits.maximumKeys, count <= maximumTypedFields else { return false }
        // A key given twice: the dictionary the full capture builds keeps the last (`==`, as its keys compare).
        for later in 1..<max(count, 1) {
            for earlier in 0..<later where fields[earlier].key == fields[later].key { return false }
        }
        return withCallRecord(
            level: level,
            message: message,
            memberCount: count,
            callSite: callSite,
            timestamp: timestamp,
            eventIDPrefix: eventIDPrefix,
            limits: limits,
            members: { writer, budget in
                for (key, value) in fields {
                    budget -= key.utf8.count + 4
                    writer.string(key)
                    guard writer.scalar(value, budget: &budget), budget >= 0 else { return false }
                }
                return true
            },
            body
        )
    }

    /// More typed fields than this take the full capture: the check for a repeated key compares every pair.
    static let maximumTypedFields = 32

    /// The record around its `userInfo` members, which `members` writes (`memberCount` of them, charging
    /// `budget`; `false`: the call needs the full capture).
    private static func withCallRecord(
        level: LogLevel,
        message: String,
        memberCount: Int,
        callSite: CallSite,
        timestamp: LogTimestamp,
        eventIDPrefix: UInt64,
        limits: CaptureLimits,
        members: (inout RecordWriter, inout Int) -> Bool,
        _ body: (UnsafeMutableRawBufferPointer) -> Bool
    ) -> Bool {
        func encode(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
            var writer = RecordWriter(buffer)
            writer.byte(version)
            writer.byte(UInt8(level.rawValue))
            writer.word(0)  // the sequence number, set under the queue's lock
            writer.word(eventIDPrefix)
            writer.word(UInt64(bitPattern: timestamp.nanosecondsSinceEpoch))
            writer.word(UInt64(callSite.line))
            writer.string(callSite.file)
            writer.string(callSite.function)
            writer.string(message)
            var budget = limits.maximumBytes
            writer.word(UInt64(memberCount))
            guard members(&writer, &budget) else { return nil }
            writer.word(0)  // metadata
            writer.word(0)  // truncations
            writer.byte(0)  // no error
            return writer.count
        }
        return withUnsafeTemporaryAllocation(byteCount: callRecordStackBytes, alignment: 8) { stack in
            guard let count = encode(into: stack) else { return false }
            if count <= stack.count { return body(UnsafeMutableRawBufferPointer(rebasing: stack[..<count])) }
            return withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) { heap in
                guard encode(into: heap) == count else { return false }
                return body(heap)
            }
        }
    }

    /// Writes into a fixed buffer; past its end it only counts, so that one pass says how large a buffer the
    /// record needs.
    struct RecordWriter {
        private let base: UnsafeMutableRawPointer?
        private let capacity: Int
        /// The bytes written (or, past the capacity, that would have been).
        private(set) var count = 0

        init(_ buffer: UnsafeMutableRawBufferPointer) {
            base = buffer.baseAddress
            capacity = buffer.count
        }

        mutating func byte(_ value: UInt8) {
            if count < capacity, let base { base.storeBytes(of: value, toByteOffset: count, as: UInt8.self) }
            count += 1
        }

        mutating func word(_ value: UInt64) {
            if count + 8 <= capacity, let base {
                base.storeBytes(of: value.littleEndian, toByteOffset: count, as: UInt64.self)
            }
            count += 8
        }

        @inline(__always)
        mutating func string(_ string: String) {
            // A native string lends its bytes as they are; only another (a bridged one) is copied to be read.
            let written: Void? = string.utf8.withContiguousStorageIfAvailable { bytes(UnsafeRawBufferPointer($0)) }
            if written == nil {
                var string = string
                string.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
            }
        }

        /// A string's UTF-8 `bytes`, after their count.
        @inline(__always)
        private mutating func bytes(_ bytes: UnsafeRawBufferPointer) {
            if count + 4 + bytes.count <= capacity, let base {
                base.storeBytes(
                    of: UInt32(truncatingIfNeeded: bytes.count).littleEndian,
                    toByteOffset: count,
                    as: UInt32.self
                )
                if let source = bytes.baseAddress {
                    (base + count + 4).copyMemory(from: source, byteCount: bytes.count)
                }
            }
            count += 4 + bytes.count
        }

        /// Writes `value` as ``ValueCapture`` would capture it, charging `budget` as it does; `false` (nothing
        /// sensible written) for anything but a `String`, `Int`, `Double` or `Bool`.
        ///
        /// The four are told apart by the type the `Any` holds, exactly: a subclass, an optional, an `NSNumber`
        /// or `NSString` is not plain (``ValueCapture`` decides what they become). They are read straight from
        /// the `Any`'s container, whose layout is Swift's stable ABI: a buffer of 3 words, then the held type's
        /// metadata; a value that fits the buffer and moves bitwise (each of the four) is kept in it. Opening the
        /// existential (`_openExistential`, before) cost ~114 instructions a value, ~62 now (`callgrind.sh --profile
        /// hot_path`); `type(of:)` is a call into the runtime, a cast its dynamic-cast machinery. The value is
        /// `inout` (the caller's own copy) because `withUnsafeBytes(of:)` on a borrowed `Any` stayed an
        /// unspecialized generic call here (~40 instructions more a value).
        mutating func plainValue(_ value: inout Any, budget: inout Int) -> Bool {
            // Never false on a platform Swift supports; if it were, every call would take the full capture.
            guard MemoryLayout<Any>.size == 32, MemoryLayout<Int>.size == 8 else { return false }
            let (type, bits) = withUnsafeMutablePointer(to: &value) { pointer in
                let container = UnsafeRawPointer(pointer)
                return (
                    container.load(fromByteOffset: 3 * MemoryLayout<Int>.size, as: UnsafeRawPointer.self),
                    container.load(as: UInt64.self)
                )
            }
            if type == Self.metadata(of: String.self) {
                let string = withUnsafeMutablePointer(to: &value) { UnsafeRawPointer($0).load(as: String.self) }
                // `scalar(.string(string))`'s encoding, written here: wrapping the string in a `LogValue` cost
                // ~60 instructions a call more (`callgrind.sh hot_path`: 4,821 against 4,757); the other three
                // fold into `scalar` at no cost.
                budget -= string.utf8.count + 2
                byte(0)
                self.string(string)
                return true
            } else if type == Self.metadata(of: Int.self) {
                return scalar(.int(Int64(bitPattern: bits)), budget: &budget)
            } else if type == Self.metadata(of: Double.self) {
                return scalar(.double(Double(bitPattern: bits)), budget: &budget)
            } else if type == Self.metadata(of: Bool.self) {
                return scalar(.bool(UInt8(truncatingIfNeeded: bits) & 1 != 0), budget: &budget)
            }
            return false
        }

        /// A type's metadata, as an `Any`'s container holds it.
        @inline(__always)
        private static func metadata(of type: Any.Type) -> UnsafeRawPointer {
            unsafeBitCast(type, to: UnsafeRawPointer.self)
        }

        /// Writes a typed field's `value` as ``ValueCapture`` would capture it, charging `budget` as it does;
        /// `false` (nothing sensible written) for an array or an object.
        mutating func scalar(_ value: LogValue, budget: inout Int) -> Bool {
            switch value {
            case .string(let string):
                budget -= string.utf8.count + 2
                byte(0)
                self.string(string)
            case .int(let int):
                budget -= 8
                byte(1)
                word(UInt64(bitPattern: int))
            case .uint(let uint):
                budget -= 8
                byte(2)
                word(uint)
            case .double(let double):
                budget -= 8
                switch ValueCapture.finite(double) {
                case .double(let double):
                    byte(3)
                    word(double.bitPattern)
                case .string(let text):
                    byte(0)
                    string(text)
                default:
                    return false
                }
            case .bool(let bool):
                budget -= 8
                byte(bool ? 5 : 4)
            case .null:
                budget -= 8
                byte(6)
            case .array, .object:
                return false
            }
            return true
        }
    }
}
