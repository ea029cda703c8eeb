import Foundation
import JustLogTools
import MallocInterposerSwift

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Counts the calling thread's allocations with ordo-one's malloc interposer (`libMallocInterposerSwift`),
/// which this tool links — and no library product does. On Linux the tool's link order puts the interposer's
/// `malloc` ahead of libc's, so every allocation of the process goes through it; counting is off except
/// inside ``count(_:)``, where a per-allocation hook adds to a tally only on the thread that counts (the
/// pipeline's and the network's threads allocate too, and are not the caller's cost).
///
/// The counter checks at start that it sees an allocation; if the interposer is not in the malloc path
/// (another platform, a static build), ``unavailableReason`` says so and no count is made up.
struct InterposerAllocationCounter: AllocationCounting {
    private(set) var unavailableReason: String?

    init() {
        unavailableReason = nil
        let probe = count { ProbeSink.value = String(repeating: "x", count: 100 + Int(getpid() % 7)) }
        if (probe?.allocations ?? 0) == 0 {
            unavailableReason =
                "the malloc interposer is not in this process's malloc path (try LD_PRELOAD=<build folder>/libMallocInterposerSwift.so)"
        }
    }

    func count(_ body: () -> Void) -> AllocationCount? {
        guard unavailableReason == nil else {
            body()
            return nil
        }
        let tally = UnsafeMutablePointer<AllocationTally>.allocate(capacity: 1)
        tally.initialize(to: AllocationTally())
        defer { tally.deallocate() }
        let key = AllocationTally.threadKey
        pthread_setspecific(key, tally)
        MallocInterposerSwift.setAllocationHook { size in
            // Runs inside malloc, on whichever thread allocates: touches only that thread's slot.
            guard let slot = pthread_getspecific(AllocationTally.threadKey) else { return }
            let tally = slot.assumingMemoryBound(to: AllocationTally.self)
            tally.pointee.allocations += 1
            tally.pointee.bytes += size
        }
        MallocInterposerSwift.hook()
        body()
        MallocInterposerSwift.unhook()
        MallocInterposerSwift.setAllocationHook(nil)
        pthread_setspecific(key, nil)
        return AllocationCount(allocations: tally.pointee.allocations, bytes: tally.pointee.bytes)
    }
}

/// The counting thread's tally, reached from the allocation hook through a thread-specific slot.
private struct AllocationTally {
    var allocations = 0
    var bytes = 0

    /// The slot; set only on the thread inside ``InterposerAllocationCounter/count(_:)``.
    static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
}

/// Where the start-up probe's allocation goes, so that the optimizer keeps it.
private enum ProbeSink {
    nonisolated(unsafe) static var value = ""
}
