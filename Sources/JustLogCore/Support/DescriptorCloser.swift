package import Dispatch

/// Closes file descriptors — where, it says. A file's last `close` can be costly: when the file was deleted while
/// open, the kernel frees it then (drops its cached pages, releases its blocks), a few milliseconds for a
/// rotated-away log of megabytes. ``background`` leaves that to a thread of its own, in order, so that the
/// pipeline's thread goes on writing.
package struct DescriptorCloser: Sendable {
    private let closeDescriptor: @Sendable (Int32) -> Void

    init(_ closeDescriptor: @escaping @Sendable (Int32) -> Void) {
        self.closeDescriptor = closeDescriptor
    }

    /// Closes `descriptor`; it must not be used after.
    package func close(_ descriptor: Int32) { closeDescriptor(descriptor) }

    /// ``background``: at most this many descriptors wait for its thread; past it the caller closes its own. A
    /// starved queue (a loaded machine, a tiny rotation size) must not hold the process's descriptors.
    static let maximumWaiting = 8

    /// On a serial queue of the process's own, at utility priority; on the calling thread while
    /// ``maximumWaiting`` descriptors already wait.
    static let background = on(
        DispatchQueue(label: "JustLog closing deleted files", qos: .utility),
        maximumWaiting: maximumWaiting
    )

    /// Closes on `queue`; on the calling thread while `maximumWaiting` descriptors already wait for it.
    package static func on(_ queue: DispatchQueue, maximumWaiting: Int) -> DescriptorCloser {
        let waiting = LockedValue(0)
        return DescriptorCloser { descriptor in
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
        }
    }
}
