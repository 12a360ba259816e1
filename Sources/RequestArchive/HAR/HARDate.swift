import Foundation

/// ISO 8601 dates as HAR writers use them: `2023-03-29T16:58:59.303-07:00`,
/// `2023-03-30T04:39:18.981Z`, `2023-07-25T11:03:15.216374+00:00` (microseconds).
/// `ISO8601DateFormatter` rejects some of these on Linux, so this reads them by hand.
enum HARDate {
    static func parse(_ text: String) -> Date? {
        let pattern = #"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$"#
        guard let match = text.range(of: pattern, options: .regularExpression), match == text.startIndex..<text.endIndex else { return nil }
        let digits = text.split(whereSeparator: { !$0.isNumber }).map(String.init)
        guard digits.count >= 6 else { return nil }
        var components = DateComponents()
        components.year = Int(digits[0])
        components.month = Int(digits[1])
        components.day = Int(digits[2])
        components.hour = Int(digits[3])
        components.minute = Int(digits[4])
        components.second = Int(digits[5])
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard var date = calendar.date(from: components) else { return nil }
        if let dot = text.firstIndex(of: ".") {
            let fraction = text[text.index(after: dot)...].prefix { $0.isNumber }
            date += Double("0." + fraction) ?? 0
        }
        if let sign = text.lastIndex(where: { $0 == "+" || $0 == "-" }), sign > text.index(text.startIndex, offsetBy: 10) {
            let offset = text[text.index(after: sign)...].filter(\.isNumber)
            if offset.count == 4, let hours = Double(offset.prefix(2)), let minutes = Double(offset.suffix(2)) {
                let seconds = (hours * 60 + minutes) * 60
                date -= text[sign] == "+" ? seconds : -seconds
            }
        }
        return date
    }

    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
