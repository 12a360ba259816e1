/// A screen's worth of characters with attributes: what the view draws and what the
/// terminal layer copies out. Tests read it as text.
public struct CellGrid: Sendable, Equatable {
    public enum Color: Int, Sendable, Hashable, CaseIterable {
        case normal = 0, red, green, yellow, blue, magenta, cyan
    }

    public struct Style: Sendable, Hashable {
        public var color = Color.normal
        public var bold = false
        public var reverse = false
        public var dim = false

        public init(color: Color = .normal, bold: Bool = false, reverse: Bool = false, dim: Bool = false) {
            self.color = color
            self.bold = bold
            self.reverse = reverse
            self.dim = dim
        }

        public static let plain = Style()
    }

    public struct Cell: Sendable, Equatable {
        public var character: Character
        public var style: Style
    }

    public let width: Int
    public let height: Int
    public private(set) var cells: [Cell]

    public init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        cells = Array(repeating: Cell(character: " ", style: .plain), count: self.width * self.height)
    }

    /// Writes `text` at column `x` of row `y`, clipped to the grid and to `limit` columns.
    /// Returns the column after the last character written.
    ///
    /// Every string a server, a recording, a HAR or an attached program chose reaches the
    /// screen through here, so control characters stop here: a tab or newline becomes a space,
    /// any other (ESC, CR, backspace, DEL, C1) becomes `�`. Given to ncurses, `\r` would move the
    /// cursor and draw over the line, and ESC would shift every column after it.
    @discardableResult
    public mutating func put(_ text: String, x: Int, y: Int, style: Style = .plain, limit: Int? = nil) -> Int {
        guard y >= 0, y < height else { return x }
        let end = min(width, limit.map { x + $0 } ?? width)
        var column = x
        for character in text {
            guard column < end else { break }
            if column >= 0 {
                cells[y * width + column] = Cell(character: Self.drawable(character), style: style)
            }
            column += 1
        }
        return column
    }

    static func drawable(_ character: Character) -> Character {
        // ASCII first: nearly every cell of every frame.
        if let ascii = character.asciiValue {
            if ascii >= 0x20, ascii != 0x7F { return character }
            return ascii == 0x09 || ascii == 0x0A ? " " : "\u{FFFD}"
        }
        if character == "\r\n" { return " " }
        return character.unicodeScalars.contains { $0.properties.generalCategory == .control } ? "\u{FFFD}" : character
    }

    /// Paints the style over a run of cells (for a selected or reversed line).
    public mutating func fill(y: Int, from x: Int = 0, to end: Int? = nil, style: Style) {
        guard y >= 0, y < height else { return }
        for column in max(0, x)..<min(width, end ?? width) {
            cells[y * width + column].style = style
        }
    }

    public func cell(x: Int, y: Int) -> Cell {
        cells[y * width + x]
    }

    /// One row as text, trailing spaces kept.
    public func line(_ y: Int) -> String {
        String(cells[(y * width)..<((y + 1) * width)].map(\.character))
    }

    /// The whole grid as text, one line a row, trailing spaces trimmed.
    public var text: String {
        (0..<height).map { y in
            var line = line(y)
            while line.last == " " { line.removeLast() }
            return line
        }.joined(separator: "\n")
    }
}
