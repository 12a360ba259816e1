import Foundation

/// The small pieces of JSON text the event format writes by hand, and the one JSON fact
/// readers need that JSONSerialization hides.
public enum JSONText {
    /// Seconds with microsecond resolution, without exponent notation. Values too large for
    /// microseconds in 64 bits (beyond about 292,000 years) are written in whole seconds.
    public static func number(_ value: Double) -> String {
        var out = JSONBytes()
        out.number(value)
        return out.text
    }

    /// A string-to-string object with its keys sorted.
    public static func object(_ dictionary: [String: String]) -> String {
        var out = JSONBytes()
        out.object(dictionary)
        return out.text
    }

    /// A JSON string literal. DEL and the C1 controls (U+0080–U+009F) are escaped too: a
    /// terminal reading the line must never meet a raw control character.
    public static func quote(_ string: String) -> String {
        var out = JSONBytes()
        out.quoted(string)
        return out.text
    }

    /// True for a JSON `true`/`false` from JSONSerialization, false for a number: both come
    /// out as NSNumber (and on Linux `1 is Bool` holds), but only booleans have objCType "c".
    public static func isBoolean(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return number.objCType.pointee == 99
    }

    /// The largest number of seconds a reader accepts (about 31 years): times, delays and
    /// durations from files and sockets are range-checked where they enter, so nothing
    /// after them has to convert a number beyond what it can hold.
    public static let maxSeconds: Double = 1_000_000_000

    /// Whole numbers a reader accepts: those a Double holds exactly (±2^53).
    public static let maxInteger: Double = 9_007_199_254_740_992

    /// A JSON number (not a boolean) of seconds from 0 to ``maxSeconds``; nil otherwise.
    public static func seconds(_ value: Any?) -> Double? {
        guard let value, let number = value as? NSNumber, !isBoolean(number) else { return nil }
        let seconds = number.doubleValue
        return seconds.isFinite && seconds >= 0 && seconds <= maxSeconds ? seconds : nil
    }

    /// A JSON number (not a boolean) that is whole and within ±``maxInteger``; nil otherwise.
    public static func integer(_ value: Any?) -> Int? {
        guard let value, let number = value as? NSNumber, !isBoolean(number) else { return nil }
        let double = number.doubleValue
        guard double == double.rounded(), abs(double) <= maxInteger else { return nil }
        return Int(double)
    }
}
