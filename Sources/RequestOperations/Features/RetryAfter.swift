import Foundation

/// Reads a `Retry-After` header (RFC 9110 §10.2.3): a number of seconds, or an HTTP-date.
public enum RetryAfter {
    /// The delay the header asks for, from `now`; `nil` when the value is not valid.
    /// A date in the past gives 0.
    public static func delay(from value: String, now: Date = Date()) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        // delay-seconds is 1*DIGIT: "1e3", "+5", "0x10", "inf" and "-1" are not delays. Any
        // number of digits is read (as a Double, so 10^30 seconds does not overflow).
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            return Double(trimmed)
        }
        guard let date = httpDate(trimmed) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// Parses the three date forms HTTP allows: IMF-fixdate, RFC 850 and asctime.
    ///
    /// Only short printable ASCII reaches `DateFormatter`: an HTTP-date is at most 33
    /// characters of it, and FoundationNetworking's formatter traps ("Incorrect range
    /// CFRange") on some non-ASCII text — one `Retry-After` from any server could end the
    /// process (found by the retry-after fuzz target: `Wed\u{7F0}ct 21 7:28:10 \u{FFFD}2015`).
    public static func httpDate(_ value: String) -> Date? {
        guard !value.isEmpty, value.utf8.count <= 40, value.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: value) { return date }
        }
        return nil
    }

    /// Formats a date as an IMF-fixdate, as servers write it.
    public static func imfFixdate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
