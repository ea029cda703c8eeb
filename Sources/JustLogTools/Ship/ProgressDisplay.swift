import Foundation
import JustLogCore

/// The progress of `justlog ship`: on a terminal, one bar redrawn with `\r`
/// (`[#########...........]  45%  12.3 MiB / 27.1 MiB  45000 events  12000 ev/s  ETA 3s`); otherwise
/// one plain line every few seconds.
struct ProgressDisplay {
    let output: TextOutput
    let interval: Duration
    let target: String
    private let start = ContinuousClock.now
    private var lastShown: ContinuousClock.Instant?
    private var drewBar = false

    init(options: ShipTool.Options, target: String) {
        output = options.progress
        interval = options.progressInterval ?? (options.progress.isTerminal ? .milliseconds(100) : .seconds(2))
        self.target = target
    }

    mutating func show(_ progress: ShipTool.Progress, force: Bool = false) {
        let now = ContinuousClock.now
        if !force, let lastShown, now - lastShown < interval { return }
        lastShown = now
        let elapsed = (now - start).totalSeconds
        let fraction = progress.totalBytes > 0 ? min(1, Double(progress.bytesRead) / Double(progress.totalBytes)) : 1
        let rate = elapsed > 0 ? Double(progress.eventsSpooled) / elapsed : 0
        let byteRate = elapsed > 0 ? Double(progress.bytesRead) / elapsed : 0
        let eta = byteRate > 0 ? Double(progress.totalBytes - progress.bytesRead) / byteRate : 0
        let percent = Int(fraction * 100)
        let counts =
            "\(Self.bytes(progress.bytesRead)) / \(Self.bytes(progress.totalBytes))  \(progress.eventsSpooled) events, \(progress.eventsSent) sent  \(Int(rate)) ev/s"
        if output.isTerminal {
            let width = 24
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            let padded = String(repeating: " ", count: max(0, 3 - String(percent).count)) + "\(percent)"
            output.write(Array("\r[\(bar)] \(padded)%  \(counts)  ETA \(Self.duration(eta))\u{1B}[K".utf8))
            drewBar = true
        } else {
            output.write(Array("justlog: \(percent)% to \(target): \(counts), ETA \(Self.duration(eta))\n".utf8))
        }
    }

    /// Draws the final state and ends the bar's line.
    mutating func finish(_ progress: ShipTool.Progress) {
        if output.isTerminal {
            show(progress, force: true)
            if drewBar { output.write(Array("\n".utf8)) }
        }
    }

    static func bytes(_ count: Int) -> String {
        let value = Double(count)
        if value >= Double(1 << 30) { return String(format: "%.1f GiB", value / Double(1 << 30)) }
        if value >= Double(1 << 20) { return String(format: "%.1f MiB", value / Double(1 << 20)) }
        if value >= Double(1 << 10) { return String(format: "%.1f KiB", value / Double(1 << 10)) }
        return "\(count) B"
    }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds > 0 else { return "0s" }
        let total = Int(seconds.rounded(.up))
        if total >= 3600 { return "\(total / 3600)h\(total % 3600 / 60)m" }
        if total >= 60 { return "\(total / 60)m\(total % 60)s" }
        return "\(total)s"
    }
}
