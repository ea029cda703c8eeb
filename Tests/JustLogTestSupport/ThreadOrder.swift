public import Testing

/// Events that several threads logged, each numbered in its thread's own order ("t<thread>-<index>"): checks,
/// one event at a time as they were delivered, that each thread's arrive once each and in its order.
public struct ThreadOrder {
    /// The index each thread's next event should have: how many of its events arrived in order.
    public private(set) var next: [Int]

    public init(threads: Int) {
        next = [Int](repeating: 0, count: threads)
    }

    /// The thread and index of a message "t<thread>-<index>" (after `prefix`), if it is one for these threads.
    public func parse(_ message: String, separator: Character = "-") -> (thread: Int, index: Int)? {
        let parts = message.dropFirst().split(separator: separator)
        guard message.hasPrefix("t"), parts.count == 2, let thread = Int(parts[0]), let index = Int(parts[1]),
            (0..<next.count).contains(thread)
        else { return nil }
        return (thread, index)
    }

    /// Takes the next delivered message "t<thread>-<index>"; records an issue if it is not one, or not its thread's
    /// next. Returns the thread and index it held.
    @discardableResult
    public mutating func take(
        _ message: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> (
        thread: Int, index: Int
    )? {
        guard let (thread, index) = parse(message) else {
            Issue.record("unexpected event: \(message.prefix(300))", sourceLocation: sourceLocation)
            return nil
        }
        take(thread: thread, index: index, sourceLocation: sourceLocation)
        return (thread, index)
    }

    /// Takes event `index` of `thread`; records an issue if it is not the thread's next.
    public mutating func take(thread: Int, index: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            index == next[thread],
            "thread \(thread): expected \(next[thread]), found \(index)",
            sourceLocation: sourceLocation
        )
        next[thread] = index + 1
    }
}
