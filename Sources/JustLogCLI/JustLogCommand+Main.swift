import ArgumentParser
import Foundation
import JustLogCore

extension JustLogCommand {
    /// Like ArgumentParser's `main()`, but a bad command line is one line on standard error
    /// (`justlog: Unknown option '--bogus'. … (add --help for usage)`) instead of the message, the usage
    /// and a hint on three lines. Help and `--version` print as usual.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }
            let text = message(for: error).split(separator: "\n").first.map(String.init) ?? ""
            if !text.isEmpty {
                let hint = code == .validationFailure ? " (add --help for usage)" : ""
                TextOutput.standardError.write(Array("justlog: \(text)\(hint)\n".utf8))
            }
            Foundation.exit(code.rawValue)
        }
    }
}
