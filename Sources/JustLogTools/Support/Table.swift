/// A plain text table with aligned columns, for summaries.
package struct Table: Sendable {
    package var headers: [String]
    package var rows: [[String]] = []

    package init(headers: [String]) {
        self.headers = headers
    }

    package mutating func add(_ row: [String]) {
        rows.append(row)
    }

    /// The table as lines: the header, a rule, the rows; numbers right-aligned.
    package var text: String {
        let all = [headers] + rows
        let widths = headers.indices.map { column in
            all.map { $0.indices.contains(column) ? $0[column].displayWidth : 0 }.max() ?? 0
        }
        func render(_ row: [String]) -> String {
            row.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: max(0, widths[column] - cell.displayWidth))
                let numeric =
                    !cell.isEmpty && cell.allSatisfy { $0.isNumber || $0 == "." || $0 == "," || $0 == "%" || $0 == "×" }
                return numeric ? pad + cell : cell + pad
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
        var lines = [render(headers), widths.map { String(repeating: "─", count: $0) }.joined(separator: "  ")]
        lines += rows.map(render)
        return lines.joined(separator: "\n") + "\n"
    }
}

extension String {
    /// Terminal columns: emoji (and characters with the emoji variation selector) take two.
    var displayWidth: Int {
        reduce(0) { width, character in
            let scalars = character.unicodeScalars
            let wide = scalars.contains { $0.properties.isEmojiPresentation || $0.value == 0xFE0F }
            return width + (wide ? 2 : 1)
        }
    }

    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
