/// Counts the heap allocations (`malloc`, `calloc`, `realloc`, …) that the calling thread makes while a
/// block runs — the allocations a log call costs its caller, not those of the background threads.
///
/// The library can't count allocations by itself: the command-line tool provides a counter backed by
/// ordo-one's malloc interposer (linked into the tool only). ``unavailable`` reports no counts, so a table
/// shows "n/a" rather than a made-up zero.
package protocol AllocationCounting: Sendable {
    /// Why counts are missing, or `nil` when ``count(_:)`` returns real counts.
    var unavailableReason: String? { get }
    /// What `body` allocated on the calling thread, or `nil` when this process can't count.
    func count(_ body: () -> Void) -> AllocationCount?
}

/// Allocations made on one thread: how many, and how many bytes were asked for.
package struct AllocationCount: Hashable, Sendable {
    package var allocations: Int
    package var bytes: Int

    package init(allocations: Int, bytes: Int) {
        self.allocations = allocations
        self.bytes = bytes
    }
}

/// The counter of a process that can't count allocations.
package struct UnavailableAllocationCounter: AllocationCounting {
    package let unavailableReason: String?

    package init(reason: String) {
        unavailableReason = reason
    }

    package func count(_ body: () -> Void) -> AllocationCount? {
        body()
        return nil
    }
}
