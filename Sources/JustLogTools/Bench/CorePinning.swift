#if canImport(Glibc)
import Glibc
#endif

/// The cores the concurrency figure's callers run on, one each (Linux; elsewhere the scheduler places them).
///
/// Left to the scheduler, the two callers of a round sometimes started on the same core: the second one, woken
/// while the pipeline's and the collector's threads were still busy on the other core after the drain, waited
/// there until the scheduler moved it — ~200 µs, most of a round, in one two-thread round in seven; the literal
/// alone, after whose drain no thread is busy, hardly ever met it (BENCHMARKS.md part 16). Each caller on a core
/// of its own is what the figure is about: logging threads that run at once.
package struct CorePinning {
    #if canImport(Glibc)
    private var original = cpu_set_t()
    /// glibc's `sched_getaffinity` and `sched_setaffinity` (the calling thread's, with pid 0), looked up at run
    /// time: Swift's Glibc module leaves out what needs `_GNU_SOURCE`.
    private typealias Affinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
    private static func affinity(_ name: String) -> Affinity? {
        dlsym(nil, name).map { unsafeBitCast($0, to: Affinity.self) }
    }
    private static let getAffinity = affinity("sched_getaffinity")
    private static let setAffinity = affinity("sched_setaffinity")
    #endif
    /// The cores this process may run on, in order (empty when unknown).
    package private(set) var cores: [Int] = []

    /// Reads the calling thread's cores, to give back in ``restore()``.
    package init() {
        #if canImport(Glibc)
        guard let getAffinity = Self.getAffinity,
            getAffinity(0, MemoryLayout<cpu_set_t>.size, &original) == 0
        else { return }
        cores = withUnsafeBytes(of: original) { bytes in
            (0..<bytes.count * 8).filter { bytes[$0 / 8] & (1 << ($0 % 8)) != 0 }
        }
        #endif
    }

    /// Keeps the calling thread on `core`; `false` if the system refused.
    @discardableResult
    package static func pinCurrentThread(to core: Int) -> Bool {
        #if canImport(Glibc)
        var set = cpu_set_t()
        guard let setAffinity, core >= 0, core < MemoryLayout<cpu_set_t>.size * 8 else { return false }
        withUnsafeMutableBytes(of: &set) { $0[core / 8] |= UInt8(1 << (core % 8)) }
        return setAffinity(0, MemoryLayout<cpu_set_t>.size, &set) == 0
        #else
        return false
        #endif
    }

    /// Gives the calling thread back the cores it had when this value was made.
    package func restore() {
        #if canImport(Glibc)
        guard !cores.isEmpty, let setAffinity = Self.setAffinity else { return }
        var set = original
        _ = setAffinity(0, MemoryLayout<cpu_set_t>.size, &set)
        #endif
    }
}
