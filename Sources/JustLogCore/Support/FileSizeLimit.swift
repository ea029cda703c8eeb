#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps a file-size limit (`ulimit -f`, `RLIMIT_FSIZE`) from killing the program.
///
/// By default the kernel sends `SIGXFSZ` to a process that writes or extends a file past its size limit, and
/// that signal's default action ends the process: a logger that reaches the limit would take the whole program
/// down. With the signal ignored, the write fails with `EFBIG` instead, which the file destination and the
/// spool handle like a full disk (count, report, retry).
///
/// Only a signal still at its default disposition is changed: a program that installed its own `SIGXFSZ`
/// handler (or ignores it already) keeps it. Called before JustLog first opens a file; cheap after the first call.
package enum FileSizeLimit {
    private static let installed: Bool = {
        var current = sigaction()
        guard sigaction(SIGXFSZ, nil, &current) == 0 else { return false }
        #if canImport(Darwin)
        let isDefault = current.__sigaction_u.__sa_handler == nil
        #else
        let isDefault = current.__sigaction_handler.sa_handler == nil
        #endif
        guard isDefault else { return false }
        var ignore = sigaction()
        #if canImport(Darwin)
        ignore.__sigaction_u.__sa_handler = SIG_IGN
        #else
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        #endif
        return sigaction(SIGXFSZ, &ignore, nil) == 0
    }()

    /// Makes writes past the file-size limit fail with `EFBIG` rather than kill the process (see the type).
    /// Returns whether this call (or an earlier one) changed the disposition.
    @discardableResult
    package static func failWritesInsteadOfKilling() -> Bool { installed }

    /// The process's file-size limit (`RLIMIT_FSIZE`, `ulimit -f`) in bytes, or `nil` if it has none (one system call).
    package static func current() -> Int? {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
        #else
        let resource = RLIMIT_FSIZE
        #endif
        // RLIM_INFINITY is all ones (Swift imports its definition as `-1`, which an unsigned `rlim_t` can't hold):
        // past `Int.max` is no limit a file meets.
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < rlim_t(Int.max) else { return nil }
        return Int(limit.rlim_cur)
    }
}
