import Foundation
import RequestEventFormat
import RequestOperations

/// ISO 8601 dates as HAR writers use them: `2023-03-29T16:58:59.303-07:00`,
/// `2023-03-30T04:39:18.981Z`, `2023-07-25T11:03:15.216374+00:00` (microseconds).
/// `ISO8601DateFormatter` rejects some of these on Linux, so this reads them by hand.
enum HARDate {
    /// Parsed by hand (no regex, no Calendar): a large HAR has tens of thousands of dates.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<(index + count)] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2), expect("T "),
              let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offset = 0
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "Z"):
                index += 1
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                let sign = bytes[index] == UInt8(ascii: "+") ? 1 : -1
                index += 1
                guard let hours = number(2) else { return nil }
                _ = expect(":")
                guard let minutes = number(2) else { return nil }
                offset = sign * (hours * 3600 + minutes * 60)
            default:
                return nil
            }
        }
        guard index == bytes.count else { return nil }
        // Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    static func format(_ date: Date) -> String {
        EventLog.iso8601(date)
    }
}
