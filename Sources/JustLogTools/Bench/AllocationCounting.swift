/// Counts the heap allocations (`malloc`, `calloc`, `realloc`, …) that the calling thread makes while a
/// block runs — the allocations a log call costs its caller, not those of the background threads.
///
/// The library can't count allocations by itself: the command-line tool provides a counter backed by
/// ordo-one's malloc interposer (linked into the tool only). ``unavailable`` reports no counts, so a table
/// shows "n/a" rather than a made-up zero.
public protocol AllocationCounting: Sendable {
    /// Why counts are missing, or `nil` when ``count(_:)`` returns real counts.
    var unavailableReason: String? { get }
    /// What `body` allocated on the calling thread, or `nil` when this process can't count.
    func count(_ body: () -> Void) -> AllocationCount?
}

/// Allocations made on one thread: how many, and how many bytes were asked for.
public struct AllocationCount: Hashable, Sendable {
    public var allocations: Int
    public var bytes: Int

    public init(allocations: Int, bytes: Int) {
        self.allocations = allocations
        self.bytes = bytes
    }
}

/// The counter of a process that can't count allocations.
public struct UnavailableAllocationCounter: AllocationCounting {
    public let unavailableReason: String?

    public init(reason: String) {
        unavailableReason = reason
    }

    public func count(_ body: () -> Void) -> AllocationCount? {
        body()
        return nil
    }
}
