/// What one log call may carry. Past a limit the event keeps what fits and its record says what was cut, in
/// ``UserInfoKey/truncated``: a huge or hostile value costs the caller a bounded time and never loses the event.
///
/// | limit | default | past it |
/// |---|---|---|
/// | ``maximumDepth`` | 32 | a deeper array or object becomes `"<nested deeper than 32: Array<Any>>"` |
/// | ``maximumKeys`` | 1 000 | an object keeps its first 1 000 members in byte order of their keys |
/// | ``maximumElements`` | 1 000 | an array or set keeps its first 1 000 elements |
/// | ``maximumBytes`` | 1 MiB | members are kept in byte order of their keys until the `userInfo` holds about this much JSON; the string that crosses the line is cut and ends in `…[truncated]` |
/// | ``maximumMessageBytes`` | 1 MiB | the message keeps its first bytes, cut at a character boundary, and ends in `…[truncated]` |
///
/// The call's `userInfo` and the user infos of its error chain each have their own ``maximumBytes``. What is
/// kept is the same in every run: the choice follows the order of keys, never the order of a hash table.
///
/// A container that holds itself, directly or through others (an `NSMutableArray` added to itself), is cut
/// the same way: the repeated container becomes `"<cycle: NSMutableArray>"`, and the record says where.
///
/// ```swift
/// let limits = CaptureLimits(maximumElements: 100)
/// let logger = StructuredLogger(configuration: .init(destinations: [.init(ConsoleDestination())], captureLimits: limits))
/// logger.info("a big payload", userInfo: ["ids": Array(0..<5000)])
/// // the record's userInfo: "ids": [0, …, 99], "truncated": "userInfo.ids: kept 100 of 5000 elements (limit 100)"
/// ```
///
/// A negative limit is 0, set in the initializer or later (review, helper-48: set later, a negative one trapped at
/// the first log call); a depth past ``deepestNesting`` is ``deepestNesting``.
public struct CaptureLimits: Hashable, Sendable {
    /// The most ``maximumDepth`` may be: the journal reads back values nested at most 256 deep, and an event nested
    /// deeper was lost there — at a full queue's spill, at recovery after a crash (review, helper-63).
    public static let deepestNesting = 200

    /// `depth` as ``maximumDepth`` takes it.
    private static func depth(_ depth: Int) -> Int { min(max(0, depth), deepestNesting) }

    /// How many arrays and objects deep a `userInfo` value may nest: 0 to ``deepestNesting``. Default 32.
    public var maximumDepth: Int { didSet { maximumDepth = Self.depth(maximumDepth) } }
    /// Members of one object, the `userInfo` itself included. Default 1 000.
    public var maximumKeys: Int { didSet { maximumKeys = max(0, maximumKeys) } }
    /// Elements of one array or set. Default 1 000.
    public var maximumElements: Int { didSet { maximumElements = max(0, maximumElements) } }
    /// About how many bytes of JSON a `userInfo` may hold: keys and strings count their UTF-8 bytes, every other
    /// value 8. Default 1 MiB.
    public var maximumBytes: Int { didSet { maximumBytes = max(0, maximumBytes) } }
    /// UTF-8 bytes of the message. Default 1 MiB, the default line limit of the Logstash destination.
    public var maximumMessageBytes: Int { didSet { maximumMessageBytes = max(0, maximumMessageBytes) } }

    public init(
        maximumDepth: Int = 32,
        maximumKeys: Int = 1_000,
        maximumElements: Int = 1_000,
        maximumBytes: Int = 1 << 20,
        maximumMessageBytes: Int = 1 << 20
    ) {
        self.maximumDepth = Self.depth(maximumDepth)
        self.maximumKeys = max(0, maximumKeys)
        self.maximumElements = max(0, maximumElements)
        self.maximumBytes = max(0, maximumBytes)
        self.maximumMessageBytes = max(0, maximumMessageBytes)
    }
}
