public import Foundation

/// A fresh folder under the system's temporary directory, removed by ``remove()`` (call it in a `defer`).
public struct TemporaryDirectory: Sendable {
    public let url: URL

    public init(_ prefix: String = "justlog-test") throws {
        let url = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            .appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        self.url = url
    }

    public var path: String { url.path }

    public func appending(_ component: String) -> URL {
        url.appendingPathComponent(component)
    }

    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
