import Foundation
import RequestEventFormat

/// What a command says to a person on stderr: one line, with nothing a terminal would act on
/// (``TerminalText/clean(_:)``: a peer's bytes cannot move the cursor or set the title).
package enum ErrorOutput {
    package static func print(_ text: String) {
        FileHandle.standardError.write(Data((TerminalText.clean(text) + "\n").utf8))
    }
}
