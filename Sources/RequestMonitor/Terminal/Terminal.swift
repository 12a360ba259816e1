import CNCurses
import Foundation

/// The only code that talks to ncurses (as htop's CRT.c): set-up and tear-down, colours,
/// copying a ``CellGrid`` out, and reading keys.
///
/// Not `Sendable`: it lives on the monitor's own thread.
final class Terminal {
    let unicode: Bool
    let color: Bool
    private var pairs: [CellGrid.Color: Int16] = [:]
    private var ended = false

    /// Takes over the terminal. `setlocale` comes first, or box glyphs come out garbled.
    init(wantColor: Bool) {
        setlocale(LC_ALL, "")
        unicode = String(cString: reqtop_codeset()).uppercased().replacingOccurrences(of: "-", with: "") == "UTF8"
        initscr()
        cbreak()
        noecho()
        keypad(reqtop_stdscr(), true)
        nodelay(reqtop_stdscr(), true)
        set_escdelay(25)
        curs_set(0)
        var color = false
        if wantColor, has_colors() {
            start_color()
            use_default_colors()
            let table: [(CellGrid.Color, Int16)] = [(.red, Int16(COLOR_RED)), (.green, Int16(COLOR_GREEN)), (.yellow, Int16(COLOR_YELLOW)),
                                                    (.blue, Int16(COLOR_BLUE)), (.magenta, Int16(COLOR_MAGENTA)), (.cyan, Int16(COLOR_CYAN))]
            for (index, entry) in table.enumerated() {
                init_pair(Int16(index + 1), entry.1, -1)
                pairs[entry.0] = Int16(index + 1)
            }
            color = true
        }
        self.color = color
    }

    deinit {
        end()
    }

    /// Gives the terminal back as it was. Safe to call more than once.
    func end() {
        guard !ended else { return }
        ended = true
        endwin()
    }

    /// Gives the terminal back for a while (Ctrl-Z): the shell's screen and modes return.
    func suspend() {
        guard !ended else { return }
        endwin()
        fflush(nil)
    }

    /// Takes the terminal again after a suspend: program modes back, the size read anew (it
    /// may have changed while stopped), and the next draw repaints every cell.
    func resume() {
        guard !ended else { return }
        updateSize()
        clearok(reqtop_curscr(), true)
        wrefresh(reqtop_stdscr())
    }

    var size: (width: Int, height: Int) {
        (Int(reqtop_cols()), Int(reqtop_lines()))
    }

    /// Reads the terminal's size from the kernel and tells ncurses. Called on SIGWINCH:
    /// in a threaded process the signal often lands on another thread, where ncurses' own
    /// handler cannot wake the loop that waits in `poll()`.
    func updateSize() {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else { return }
        resizeterm(Int32(size.ws_row), Int32(size.ws_col))
        wclear(reqtop_stdscr())
    }

    /// Puts `text` on the clipboard of the terminal the person sits at, with the OSC 52
    /// escape (xterm's; tmux passes it on with `set-clipboard on`, and it crosses SSH),
    /// written past ncurses, which does not know it.
    func copyToClipboard(_ text: String) {
        let sequence = "\u{1B}]52;c;\(Data(text.utf8).base64EncodedString())\u{07}"
        FileHandle.standardOutput.write(Data(sequence.utf8))
    }

    /// Copies the grid to the screen; ncurses sends only what changed.
    func draw(_ grid: CellGrid) {
        let screen = reqtop_stdscr()
        for y in 0..<grid.height {
            var x = 0
            while x < grid.width {
                let style = grid.cell(x: x, y: y).style
                var run = ""
                var end = x
                while end < grid.width, grid.cell(x: end, y: y).style == style {
                    run.append(grid.cell(x: end, y: y).character)
                    end += 1
                }
                wattrset(screen, Int32(bitPattern: attributes(style)))
                // The bottom-right cell cannot be written without scrolling: leave it.
                if y == grid.height - 1, end == grid.width { run.removeLast() }
                _ = mvwaddstr(screen, Int32(y), Int32(x), run)
                x = end
            }
        }
        wattrset(screen, Int32(bitPattern: reqtop_a_normal()))
        wrefresh(screen)
    }

    private func attributes(_ style: CellGrid.Style) -> UInt32 {
        var value = reqtop_a_normal()
        if style.bold { value |= reqtop_a_bold() }
        if style.reverse { value |= reqtop_a_reverse() }
        if style.dim { value |= reqtop_a_dim() }
        if color, style.color != .normal, let pair = pairs[style.color] { value |= reqtop_color_pair(Int32(pair)) }
        return UInt32(value)
    }

    /// Every key waiting, without blocking.
    func readKeys() -> [KeyMap.Key] {
        var keys: [KeyMap.Key] = []
        var character: wint_t = 0
        while true {
            let kind = wget_wch(reqtop_stdscr(), &character)
            if kind == ERR { break }
            let code = Int32(bitPattern: UInt32(character))
            if kind == KEY_CODE_YES {
                switch code {
                case reqtop_key_up(): keys.append(.up)
                case reqtop_key_down(): keys.append(.down)
                case reqtop_key_ppage(): keys.append(.pageUp)
                case reqtop_key_npage(): keys.append(.pageDown)
                case reqtop_key_home(): keys.append(.home)
                case reqtop_key_end(): keys.append(.end)
                case reqtop_key_enter(): keys.append(.enter)
                case reqtop_key_backspace(): keys.append(.backspace)
                case reqtop_key_btab(): keys.append(.backTab)
                case reqtop_key_f1(): keys.append(.f1)
                case reqtop_key_resize(): keys.append(.resize)
                default: break
                }
                continue
            }
            switch code {
            case 10, 13: keys.append(.enter)
            case 27: keys.append(.escape)
            case 9: keys.append(.tab)
            case 8, 127: keys.append(.backspace)
            default:
                if let scalar = Unicode.Scalar(UInt32(character)) { keys.append(.character(Character(scalar))) }
            }
        }
        return keys
    }
}
