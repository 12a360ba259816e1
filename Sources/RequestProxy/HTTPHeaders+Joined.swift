import NIOHTTP1

extension HTTPHeaders {
    /// One value per name (as the events' headers are), a repeated field's values joined by
    /// `, ` in their order; `except` leaves out the names it says.
    func joinedByName(except excluded: (String) -> Bool = { _ in false }) -> [String: String] {
        var joined: [String: String] = [:]
        for (name, value) in self where !excluded(name) {
            joined[name] = joined[name].map { "\($0), \(value)" } ?? value
        }
        return joined
    }
}
