/// Text meant for a person's terminal, made safe to print. A recording, a HAR, a plan or a
/// server chooses strings reqtop prints (operation ids, URLs, header values, messages that
/// quote them); printed raw, an `ESC ] 52` in one writes the person's clipboard, an `ESC ] 0`
/// sets the window title, and a CR draws over the line before it. Every line reqtop prints
/// for a person goes through ``clean(_:singleLine:)``, as every cell of the monitor goes
/// through its `CellGrid`.
public enum TerminalText {
    /// A control character: C0 (below U+0020), DEL, or C1 (U+0080 to U+009F, which some
    /// terminals read as escapes too).
    @inline(__always)
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `text` with each control character written out as `\xHH` (`\u{HHHH}` past ASCII's
    /// range is not needed: every control is below U+00A0). Line breaks and tabs are kept
    /// unless `singleLine`, where they are written out too (an id must not begin a new line).
    public static func clean(_ text: String, singleLine: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) && (singleLine || ($0 != "\n" && $0 != "\t")) }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            if isControl(scalar), singleLine || (scalar != "\n" && scalar != "\t") {
                let hex = String(scalar.value, radix: 16)
                out += "\\x" + (hex.count < 2 ? "0" : "") + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// JSON text with DEL and the C1 controls, which JSON lets stand raw inside a string,
    /// escaped as `\u00HH` (the same string to any JSON reader). Controls below U+0020 are
    /// escaped by every JSON writer already; outside strings JSON has no such characters.
    public static func escapingControls(json: String) -> String {
        guard json.unicodeScalars.contains(where: { (0x7F...0x9F).contains($0.value) }) else { return json }
        var out = ""
        for scalar in json.unicodeScalars {
            if (0x7F...0x9F).contains(scalar.value) {
                out += "\\u00" + String(scalar.value, radix: 16)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
