package import Dispatch

/// Closes file descriptors — where, it says. A file's last `close` can be costly: when the file was deleted while
/// open, the kernel frees it then (drops its cached pages, releases its blocks), a few milliseconds for a
/// rotated-away log of megabytes. ``background`` leaves that to a serial queue of its own, so that the pipeline's
/// thread goes on writing.
package struct DescriptorCloser: Sendable {
    private let closeDescriptor: @Sendable (Int32) -> Void
    private let waitForCloses: @Sendable () -> Void

    private init(close: @escaping @Sendable (Int32) -> Void, drain: @escaping @Sendable () -> Void) {
        closeDescriptor = close
        waitForCloses = drain
    }

    /// Closes `descriptor` (perhaps later, on another thread); it must not be used after.
    package func close(_ descriptor: Int32) { closeDescriptor(descriptor) }

    /// Returns once every descriptor handed to ``close(_:)`` before is closed.
    package func drain() { waitForCloses() }

    /// This closer, calling `onDrain` as a ``drain()`` begins (tests see a shutdown wait for the closes).
    package func observingDrain(_ onDrain: @escaping @Sendable () -> Void) -> DescriptorCloser {
        DescriptorCloser(close: closeDescriptor) { [waitForCloses] in
            onDrain()
            waitForCloses()
        }
    }

    /// ``background``: at most this many descriptors wait for its queue; past it the caller closes its own. A
    /// starved queue (a loaded machine, a tiny rotation size) must not hold the process's descriptors.
    static let maximumWaiting = 8

    /// On a serial queue of the process's own (Dispatch's threads), at utility priority; on the calling thread
    /// while ``maximumWaiting`` descriptors already wait.
    static let background = on(
        DispatchQueue(label: "JustLog closing deleted files", qos: .utility),
        maximumWaiting: maximumWaiting
    )

    /// Closes on `queue`; on the calling thread while `maximumWaiting` descriptors already wait for it.
    package static func on(_ queue: DispatchQueue, maximumWaiting: Int) -> DescriptorCloser {
        let waiting = LockedValue(0)
        return DescriptorCloser(
            close: { descriptor in
                let queued = waiting.withLock { count in
                    guard count < maximumWaiting else { return false }
                    count += 1
                    return true
                }
                guard queued else { return systemClose(descriptor) }
                queue.async {
                    systemClose(descriptor)
                    waiting.withLock { $0 -= 1 }
                }
            },
            drain: { queue.sync {} }
        )
    }
}
