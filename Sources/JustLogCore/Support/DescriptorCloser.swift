import Dispatch

/// Closes file descriptors — where, it says. A file's last `close` can be costly: when the file was deleted while
/// open, the kernel frees it then (drops its cached pages, releases its blocks), a few milliseconds for a
/// rotated-away log of megabytes. ``background`` leaves that to a thread of its own, in order, so that the
/// pipeline's thread goes on writing.
struct DescriptorCloser: Sendable {
    private let closeDescriptor: @Sendable (Int32) -> Void

    init(_ closeDescriptor: @escaping @Sendable (Int32) -> Void) {
        self.closeDescriptor = closeDescriptor
    }

    /// Closes `descriptor`; it must not be used after.
    func close(_ descriptor: Int32) { closeDescriptor(descriptor) }

    /// On a serial queue of the process's own, at utility priority.
    static let background: DescriptorCloser = {
        let queue = DispatchQueue(label: "JustLog closing deleted files", qos: .utility)
        return DescriptorCloser { descriptor in queue.async { systemClose(descriptor) } }
    }()
}
