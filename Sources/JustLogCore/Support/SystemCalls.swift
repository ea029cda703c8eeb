#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The few system calls JustLog makes itself, named so that they can be called where `write`, `open` and
// `close` mean methods of the caller.

/// The names in the folder at `path`, `.` and `..` included; `nil` if it can't be read (`errno` says why).
package func directoryEntries(_ path: String) -> [String]? {
    guard let dir = opendir(path) else { return nil }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        names.append(
            withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
        )
    }
    return names
}

/// Takes the exclusive `flock` of the file open as `descriptor`, waiting up to `wait` for a holder that is about to
/// let go (a spool's folder, `justlog ship`'s spool folder).
///
/// A lock belongs to the open file: a child process being spawned holds a copy of the descriptor from `fork` until
/// `exec` closes it (`O_CLOEXEC`), so a lock let go a moment ago can still look held while the program starts a
/// subprocess. A second program really using the folder holds it for good.
package func lockExclusively(_ descriptor: CInt, wait: Duration) -> Bool {
    // At most a day of tries: `Duration.seconds(Int64.max)` ("wait forever") is past what `Int` holds.
    let attempts = Int(min(max(wait / .milliseconds(10), 1), 8_640_000))
    for attempt in 0..<attempts {
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
        guard errno == EWOULDBLOCK || errno == EINTR else { return false }
        if attempt + 1 < attempts { usleep(10_000) }
    }
    return false
}

/// Writes all of `bytes` to `descriptor`, retrying partial writes and `EINTR`; returns `nil`, or the
/// `errno` of the write that failed.
@discardableResult
package func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Int32? {
    writePrefix(descriptor, bytes).error
}

/// Writes as much of `bytes` to `descriptor` as it takes, retrying partial writes and `EINTR`; returns how
/// many bytes were written and, when that is not all of them, the `errno` of the write that failed (a full
/// disk or a file-size limit can take the first part of a buffer and refuse the rest).
package func writePrefix(_ descriptor: Int32, _ bytes: [UInt8]) -> (written: Int, error: Int32?) {
    bytes.withUnsafeBytes { writePrefix(descriptor, $0) }
}

/// Writes as much of `buffer` as the kernel takes (see ``writePrefix(_:_:)``).
package func writePrefix(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer) -> (written: Int, error: Int32?) {
    var offset = 0
    while offset < buffer.count {
        let written = systemWrite(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            return (offset, errno)
        }
        if written == 0 { return (offset, EIO) }
        offset += written
    }
    return (offset, nil)
}

@inline(__always)
func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
    return Darwin.write(fd, buffer, count)
    #elseif canImport(Musl)
    return Musl.write(fd, buffer, count)
    #else
    return Glibc.write(fd, buffer, count)
    #endif
}

@inline(__always)
func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    #if canImport(Darwin)
    return Darwin.open(path, flags, mode)
    #elseif canImport(Musl)
    return Musl.open(path, flags, mode)
    #else
    return Glibc.open(path, flags, mode)
    #endif
}

@inline(__always)
func systemClose(_ fd: Int32) {
    #if canImport(Darwin)
    _ = Darwin.close(fd)
    #elseif canImport(Musl)
    _ = Musl.close(fd)
    #else
    _ = Glibc.close(fd)
    #endif
}
