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

    /// Hands `body` the record `encode` writes: into ``callRecordStackBytes`` on the stack, or — when `encode` says
    /// it needs more — again into a heap buffer of its exact size. `encode` returns the record's size (nothing is
    /// written past the buffer it is given), or `nil` when the call needs the full capture: then `body` is not
    /// called, and the answer is `false`. Inlined, with both closures: a log call calls neither through a context.
    @inline(__always)
    static func withRecord(
        encodedBy encode: (UnsafeMutableRawBufferPointer) -> Int?,
        _ body: (UnsafeMutableRawBufferPointer) -> Bool
    ) -> Bool {
        withUnsafeTemporaryAllocation(byteCount: callRecordStackBytes, alignment: 8) { stack in
            guard let count = encode(stack) else { return false }
            if count <= stack.count { return body(UnsafeMutableRawBufferPointer(rebasing: stack[..<count])) }
            return withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) { heap in
                guard encode(heap) == count else { return false }
                return body(heap)
            }
        }
    }

    /// Writes the record of a call whose `userInfo` holds only plain values within `limits` into `buffer` (sequence
    /// number 0, see ``setSequence(_:in:)``; for ``withRecord(encodedBy:_:)``): its size, or `nil` when the call
    /// needs the full capture.
    @inline(__always)
    static func encodeCall(
        level: LogLevel,
        message: String,
        userInfo: [String: Any]?,
        callSite: CallSite,
        timestamp: LogTimestamp,
        eventIDPrefix: UInt64,
        limits: CaptureLimits,
        into buffer: UnsafeMutableRawBufferPointer
    ) -> Int? {
        encodeCall(
            level: level,
            message: message,
            userInfo: userInfo,
            callSite: callSite,
            timestamp: timestamp,
            eventIDPrefix: eventIDPrefix,
            maximumKeys: limits.maximumKeys,
            maximumBytes: limits.maximumBytes,
            into: buffer
        )
    }

    /// ``encodeCall(level:message:userInfo:callSite:timestamp:eventIDPrefix:limits:into:)`` with the two limits it
    /// reads (the whole value costs a log call its other fields' passing). Never inlined: in its caller's body the
    /// optimizer stopped inlining the buffer's own accessors (+180 instructions a call).
    @inline(never)
    private static func encodeCall(
        level: LogLevel,
        message: String,
        userInfo: [String: Any]?,
        callSite: CallSite,
        timestamp: LogTimestamp,
        eventIDPrefix: UInt64,
        maximumKeys: Int,
        maximumBytes: Int,
        into buffer: UnsafeMutableRawBufferPointer
    ) -> Int? {
        var writer = RecordWriter(buffer)
        // No members: no dictionary to walk (an empty one costs its iteration's set-up all the same).
        guard let userInfo, !userInfo.isEmpty else {
            writer.start(level, message, callSite, timestamp, eventIDPrefix, memberCount: 0)
            return writer.finish()
        }
        // ValueCapture keeps at most `maximumKeys` members and about `maximumBytes`: keys at their length + 4,
        // strings at theirs + 2, other scalars at 8. Within both nothing is cut, and it keeps them as they are.
        guard userInfo.count <= maximumKeys else { return nil }
        writer.start(level, message, callSite, timestamp, eventIDPrefix, memberCount: userInfo.count)
        var budget = Self.budget(maximumBytes)
        // In place, where the dictionary's storage allows (see DictionaryEntries): no key or value copied.
        let walked = DictionaryEntries.visit(userInfo) { key, value in
            budget &-= writer.string(at: key) &+ 4
            return writer.plainValue(at: value, budget: &budget) && budget >= 0
        }
        guard let walked else { return iterate(userInfo, after: writer, budget: budget) }
        return walked ? writer.finish() : nil
    }

    /// ``encodeCall(level:message:userInfo:callSite:timestamp:eventIDPrefix:limits:into:)``'s members, and the
    /// record's end, where the dictionary's storage can't be read in place: through the standard library's
    /// iterators. (Its own copy of the writer: one passed `inout` would keep the caller's out of registers.)
    @inline(never)
    private static func iterate(_ userInfo: [String: Any], after start: RecordWriter, budget: Int) -> Int? {
        var writer = start
        var budget = budget
        // Keys and values apart, each view in its order (the same): iterating pairs copies each `(String, Any)`
        // through the runtime, and subscripting by index checks every index.
        var keys = userInfo.keys.makeIterator()
        var values = userInfo.values.makeIterator()
        while let key = keys.next(), var value = values.next() {
            budget &-= writer.string(key) &+ 4
            let plain = withUnsafeMutablePointer(to: &value) {
                writer.plainValue(at: UnsafeRawPointer($0), budget: &budget)
            }
            guard plain, budget >= 0 else { return nil }
        }
        return writer.finish()
    }

    /// Writes the record of a call whose typed `fields` hold only scalars within `limits` into `buffer`, as
    /// ``encodeCall(level:message:userInfo:callSite:timestamp:eventIDPrefix:limits:into:)`` does a dictionary's: the
    /// same record as for a `userInfo` of the same values. `nil` when the call needs the full capture: a nested
    /// value, a key given twice (the capture keeps the last), values past a limit. Never inlined: in its caller's
    /// body the optimizer stopped inlining the buffer's own accessors (+180 instructions a call).
    @inline(never)
    static func encodeCall(
        level: LogLevel,
        message: String,
        fields: KeyValuePairs<String, LogValue>,
        callSite: CallSite,
        timestamp: LogTimestamp,
        eventIDPrefix: UInt64,
        limits: CaptureLimits,
        into buffer: UnsafeMutableRawBufferPointer
    ) -> Int? {
        let count = fields.count
        guard count <= limits.maximumKeys, count <= maximumTypedFields else { return nil }
        // A key given twice: the dictionary the full capture builds keeps the last (`==`, as its keys compare).
        for later in 1..<max(count, 1) {
            for earlier in 0..<later where fields[earlier].key == fields[later].key { return nil }
        }
        var writer = RecordWriter(buffer)
        writer.start(level, message, callSite, timestamp, eventIDPrefix, memberCount: count)
        var budget = Self.budget(limits.maximumBytes)
        for (key, value) in fields {
            budget &-= writer.string(key) &+ 4
            guard writer.scalar(value, budget: &budget), budget >= 0 else { return nil }
        }
        return writer.finish()
    }

    /// More typed fields than this take the full capture: the check for a repeated key compares every pair.
    static let maximumTypedFields = 32

    /// The bytes a call's members may take, charged as ``ValueCapture`` charges them. Never below zero, so that
    /// charging it (wrapping arithmetic) wraps nowhere: a negative limit takes the full capture, as 0 does.
    @inline(__always)
    private static func budget(_ maximumBytes: Int) -> Int { max(maximumBytes, 0) }

    /// Writes into a fixed buffer; past its end it only counts, so that one pass says how large a buffer the
    /// record needs.
    ///
    /// Counts add without overflow checks: a record's size is a sum of a few dozen lengths, each below 2^48.
    struct RecordWriter {
        /// Never written past `capacity` (an empty buffer's stand-in address is never written at all).
        private let base: UnsafeMutableRawPointer
        private let capacity: Int
        /// The bytes written (or, past the capacity, that would have been).
        private(set) var count = 0

        init(_ buffer: UnsafeMutableRawBufferPointer) {
            if let address = buffer.baseAddress {
                base = address
                capacity = buffer.count
            } else {
                base = UnsafeMutableRawPointer(bitPattern: MemoryLayout<UInt64>.alignment)!
                capacity = 0
            }
        }

        /// The record up to its members: the format's version, the level, the sequence number (0: set under the
        /// queue's lock, ``JournalCodec/setSequence(_:in:)``), the `event_id` prefix, the time, the call site's
        /// line (one room check for those 34 bytes), file and function, the message, and the count of members.
        @inline(__always)
        mutating func start(
            _ level: LogLevel,
            _ message: String,
            _ callSite: CallSite,
            _ timestamp: LogTimestamp,
            _ eventIDPrefix: UInt64,
            memberCount: Int
        ) {
            if count &+ 34 <= capacity {
                let start = base + count
                start.storeBytes(of: JournalCodec.version, as: UInt8.self)
                start.storeBytes(of: UInt8(truncatingIfNeeded: level.rawValue), toByteOffset: 1, as: UInt8.self)
                start.storeBytes(of: UInt64(0), toByteOffset: 2, as: UInt64.self)
                start.storeBytes(of: eventIDPrefix.littleEndian, toByteOffset: 10, as: UInt64.self)
                start.storeBytes(
                    of: UInt64(bitPattern: timestamp.nanosecondsSinceEpoch).littleEndian,
                    toByteOffset: 18,
                    as: UInt64.self
                )
                start.storeBytes(of: UInt64(callSite.line).littleEndian, toByteOffset: 26, as: UInt64.self)
            }
            count &+= 34
            string(callSite.file)
            string(callSite.function)
            string(message)
            word(UInt64(memberCount))
        }

        /// The record after its members (no metadata, no truncations, no error); returns its size.
        @inline(__always)
        mutating func finish() -> Int {
            word(0)  // metadata
            word(0)  // truncations
            byte(0)  // no error
            return count
        }

        mutating func byte(_ value: UInt8) {
            if count < capacity { base.storeBytes(of: value, toByteOffset: count, as: UInt8.self) }
            count &+= 1
        }

        mutating func word(_ value: UInt64) {
            if count &+ 8 <= capacity { base.storeBytes(of: value.littleEndian, toByteOffset: count, as: UInt64.self) }
            count &+= 8
        }

        /// Writes `string`'s UTF-8 after its count; returns the count of bytes.
        ///
        /// Read where the string keeps them (``StringLayout``); only a string of another form (shared, bridged)
        /// is lent by the standard library.
        @inline(__always)
        @discardableResult
        mutating func string(_ string: String) -> Int {
            if let length = bytes(of: StringLayout(string)) { return length }
            return lentBytes(of: string)
        }

        /// ``string(_:)`` for the string at `pointer` (a dictionary's key or an `Any`'s), not loaded unless its
        /// form needs the standard library.
        @inline(__always)
        mutating func string(at pointer: UnsafePointer<String>) -> Int {
            if let length = bytes(of: StringLayout(at: pointer)) { return length }
            return lentBytes(of: pointer.pointee)
        }

        /// Writes the bytes a small or contiguous string holds, after their count, and returns the count; `nil`
        /// (nothing written) for another layout. A small string's two words are stored whole where there is
        /// room (16 bytes: those past its count are overwritten by what follows, or lie past the record's end).
        @inline(__always)
        private mutating func bytes(of layout: StringLayout) -> Int? {
            switch layout {
            case .small(let low, let high, let length):
                if count &+ 20 <= capacity {
                    base.storeBytes(
                        of: UInt32(truncatingIfNeeded: length).littleEndian,
                        toByteOffset: count,
                        as: UInt32.self
                    )
                    base.storeBytes(of: low, toByteOffset: count &+ 4, as: UInt64.self)
                    base.storeBytes(of: high, toByteOffset: count &+ 12, as: UInt64.self)
                    count &+= 4 &+ length
                } else {
                    withUnsafeBytes(of: (low, high)) { bytes(UnsafeRawBufferPointer(rebasing: $0[..<length])) }
                }
                return length
            case .contiguous(let start, let length):
                bytes(UnsafeRawBufferPointer(start: start, count: length))
                return length
            case .other:
                return nil
            }
        }

        /// Writes `string`'s UTF-8, lent by the standard library, after its count; returns the count.
        @inline(never)
        private mutating func lentBytes(of string: String) -> Int {
            // A native string lends its bytes as they are; only another (a bridged one) is copied to be read.
            var length = 0
            let written: Void? = string.utf8.withContiguousStorageIfAvailable {
                length = $0.count
                bytes(UnsafeRawBufferPointer($0))
            }
            if written == nil {
                var string = string
                string.withUTF8 {
                    length = $0.count
                    bytes(UnsafeRawBufferPointer($0))
                }
            }
            return length
        }

        /// A string's UTF-8 `bytes`, after their count.
        @inline(__always)
        private mutating func bytes(_ bytes: UnsafeRawBufferPointer) {
            if count &+ 4 &+ bytes.count <= capacity {
                base.storeBytes(
                    of: UInt32(truncatingIfNeeded: bytes.count).littleEndian,
                    toByteOffset: count,
                    as: UInt32.self
                )
                if let source = bytes.baseAddress {
                    (base + (count &+ 4)).copyMemory(from: source, byteCount: bytes.count)
                }
            }
            count &+= 4 &+ bytes.count
        }

        /// Writes the `Any` at `container` as ``ValueCapture`` would capture it, charging `budget` as it does;
        /// `false` (nothing sensible written) for anything but a `String`, `Int`, `Double` or `Bool`.
        ///
        /// The four are told apart by the type the `Any` holds, exactly: a subclass, an optional, an `NSNumber`
        /// or `NSString` is not plain (``ValueCapture`` decides what they become). They are read straight from
        /// the `Any`'s container, whose layout is Swift's stable ABI: a buffer of 3 words, then the held type's
        /// metadata; a value that fits the buffer and moves bitwise (each of the four) is kept in it. Opening the
        /// existential (`_openExistential`, before) cost ~114 instructions a value, ~62 now (`callgrind.sh --profile
        /// hot_path`); `type(of:)` is a call into the runtime, a cast its dynamic-cast machinery. The container is
        /// read where it lies (in the dictionary's storage, see ``DictionaryEntries``): a string held there is lent,
        /// not copied.
        @inline(__always)
        mutating func plainValue(at container: UnsafeRawPointer, budget: inout Int) -> Bool {
            // Never false on a platform Swift supports; if it were, every call would take the full capture.
            guard MemoryLayout<Any>.size == 32, MemoryLayout<Int>.size == 8 else { return false }
            let type = container.load(fromByteOffset: 3 * MemoryLayout<Int>.size, as: UnsafeRawPointer.self)
            let bits = container.load(as: UInt64.self)
            if type == Self.metadata(of: String.self) {
                let string = container.assumingMemoryBound(to: String.self)
                // `scalar(.string(string))`'s encoding, written here: wrapping the string in a `LogValue` cost
                // ~60 instructions a call more (`callgrind.sh hot_path`: 4,821 against 4,757); the other three
                // fold into `scalar` at no cost.
                byte(0)
                budget &-= self.string(at: string) &+ 2
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
                byte(0)
                budget &-= self.string(string) &+ 2
            case .int(let int):
                budget &-= 8
                byte(1)
                word(UInt64(bitPattern: int))
            case .uint(let uint):
                budget &-= 8
                byte(2)
                word(uint)
            case .double(let double):
                budget &-= 8
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
                budget &-= 8
                byte(bool ? 5 : 4)
            case .null:
                budget &-= 8
                byte(6)
            case .array, .object:
                return false
            }
            return true
        }
    }
}
