/// Glyphs and colours for states. Monochrome (`NO_COLOR`, `--no-color`) still tells states
/// apart by glyph, word and weight; a terminal that is not UTF-8 gets ASCII glyphs.
public struct Theme: Sendable, Equatable {
    public var color: Bool
    public var unicode: Bool

    public init(color: Bool = true, unicode: Bool = true) {
        self.color = color
        self.unicode = unicode
    }

    public func glyph(_ state: OperationRow.State) -> String {
        switch state {
        case .queued: unicode ? "·" : "."
        case .preparing: unicode ? "◌" : "~"
        case .running: unicode ? "▶" : ">"
        case .backoff: unicode ? "↻" : "R"
        case .held: unicode ? "‖" : "H"
        case .succeeded: unicode ? "✓" : "+"
        case .failed: unicode ? "✗" : "x"
        case .cancelled: unicode ? "⊘" : "-"
        case .relayed: unicode ? "↪" : ">"
        }
    }

    public func word(_ state: OperationRow.State) -> String {
        switch state {
        case .queued: "queued"
        case .preparing: "preparing"
        case .running: "running"
        case .backoff: "backoff"
        case .held: "held"
        case .succeeded: "ok"
        case .failed: "failed"
        case .cancelled: "cancelled"
        case .relayed: "relayed"
        }
    }

    public func style(_ state: OperationRow.State) -> CellGrid.Style {
        let color: CellGrid.Color = switch state {
        case .queued: .normal
        case .preparing, .running: .cyan
        case .backoff, .held: .yellow
        case .succeeded: .green
        case .failed: .red
        case .cancelled: .magenta
        case .relayed: .blue
        }
        // Weight carries meaning without colour: active and failed rows stand out.
        let bold = state == .running || state == .failed || state == .backoff
        return CellGrid.Style(color: self.color ? color : .normal, bold: bold, dim: state == .queued || state == .cancelled)
    }

    public var attemptBar: String { unicode ? "█" : "#" }
    public var waitBar: String { unicode ? "░" : "." }
    public var ellipsis: String { unicode ? "…" : "~" }
    public var separator: String { unicode ? "·" : "-" }
    public var dash: String { unicode ? "–" : "-" }
    public var arrow: String { unicode ? "→" : "->" }
    public var times: String { unicode ? "×" : "x" }
}
