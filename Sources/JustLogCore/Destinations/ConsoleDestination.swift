public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows each record as one readable line — the message only — on standard output (SPEC §1):
///
/// ```text
/// 2016-12-24 12:31:02.734  ℹ️ INFO: a nice information
/// ```
///
/// Control characters in the message are neutralized (``TerminalSafeText``), so a message can neither forge
/// a second line nor recolor the terminal. The level is colored only when the output is a terminal.
/// Lines of a batch are written with one `write(2)`, from the pipeline's thread.
///
/// ```swift
/// let console = ConsoleDestination(configuration: .init(colors: .never))
/// ```
public final class ConsoleDestination: LogDestination {
    /// How a console destination writes.
    public struct Configuration: Sendable {
        /// Where lines go. Default: standard output.
        public var output: TextOutput
        /// Whether to color the level. Default ``ColorMode/automatic`` (only on a terminal).
        public var colors: ColorMode
        /// The zone of line times. Default: the local zone.
        public var timeZone: TimeZone

        public init(output: TextOutput = .standardOutput, colors: ColorMode = .automatic, timeZone: TimeZone = .current)
        {
            self.output = output
            self.colors = colors
            self.timeZone = timeZone
        }
    }

    /// When console lines are colored.
    public enum ColorMode: Sendable, Hashable {
        case automatic, always, never
    }

    public let configuration: Configuration
    private let format: LineFormat

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let colors: Bool
        switch configuration.colors {
        case .always: colors = true
        case .never: colors = false
        case .automatic: colors = configuration.output.isTerminal
        }
        self.format = LineFormat(timeZone: configuration.timeZone, colors: colors)
    }

    /// Events recovered from the journal are not printed again: the one line that says how many is.
    public func journalRecovery() -> JournalRecovery { .countOnly }

    public func write(_ batch: LogBatch) {
        var text = ""
        for record in batch.records {
            text += format.consoleLine(for: record)
        }
        configuration.output.write(Array(text.utf8))
    }
}

/// A place to write text: a file descriptor (standard output, standard error) or a closure (tests).
public struct TextOutput: Sendable {
    /// Whether the output is an interactive terminal.
    public var isTerminal: Bool
    private let sink: @Sendable ([UInt8]) -> Void

    public init(isTerminal: Bool = false, _ sink: @escaping @Sendable ([UInt8]) -> Void) {
        self.isTerminal = isTerminal
        self.sink = sink
    }

    /// Writes to a file descriptor with `write(2)`, retrying partial writes and `EINTR`.
    public init(fileDescriptor: Int32) {
        self.isTerminal = isatty(fileDescriptor) == 1
        self.sink = { bytes in writeAll(fileDescriptor, bytes) }
    }

    public static var standardOutput: TextOutput { TextOutput(fileDescriptor: 1) }
    public static var standardError: TextOutput { TextOutput(fileDescriptor: 2) }

    public func write(_ bytes: [UInt8]) {
        if !bytes.isEmpty { sink(bytes) }
    }
}
