import Foundation
import JustLogTestSupport
import Testing

/// Every Swift snippet of the README is compiled by the tests: each block's lines (imports aside) appear, in
/// order and contiguous, in one of the files that hold them as code; each of its imports is imported there.
@Suite struct ReadmeSnippetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let compiledFiles = ["ReadmeSnippets.swift", "ReadmeSwiftLogSnippet.swift", "DocumentedAPITests.swift"]

    /// The README's ```swift blocks, each as its lines.
    static func readmeSnippets() throws -> [[String]] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [[String]] = []
        var current: [String]?
        for line in readme.components(separatedBy: "\n") {
            if current == nil, line.hasPrefix("```swift") {
                current = []
            } else if current != nil, line.hasPrefix("```") {
                blocks.append(current!)
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    static func significant(_ lines: [String]) -> [String] {
        lines.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    @Test func everySwiftSnippetInTheReadmeIsCompiledByATest() throws {
        let snippets = try Self.readmeSnippets()
        #expect(snippets.count >= 4, "the README's Swift blocks were found (\(snippets.count))")
        let files = try Self.compiledFiles.map { name in
            let text = try String(
                contentsOf: Self.root.appendingPathComponent("Tests/JustLogTests/\(name)"),
                encoding: .utf8
            )
            return (name: name, lines: Self.significant(text.components(separatedBy: "\n")))
        }
        for snippet in snippets {
            let lines = Self.significant(snippet)
            let imports = lines.filter { $0.hasPrefix("import ") }
            let code = lines.filter { !$0.hasPrefix("import ") }
            let home = files.first { file in
                imports.allSatisfy(file.lines.contains) && Self.containsContiguously(file.lines, code)
            }
            #expect(
                home != nil,
                "README snippet not compiled by any of \(Self.compiledFiles):\n\(snippet.joined(separator: "\n"))"
            )
        }
    }

    static func containsContiguously(_ haystack: [String], _ needle: [String]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    @Test func theSnippetWithoutTheSingletonRunsWithoutRoot() async throws {
        try await readmeWithoutTheSingleton()
    }
}
