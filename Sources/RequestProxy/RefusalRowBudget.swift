/// How many requests the proxy refuses become rows (``ProxyRefusalRow``): at most
/// ``perSecond`` in any one second, counted from the first of them; past that, the refusals are
/// answered as ever but counted, not shown, and the next row says how many it stands for.
///
/// A refused request costs its sender nothing: with `--allow-remote --auth`, a client with no
/// credentials could send thousands of 407s a second and, a row each, push every real request
/// out of the monitor and fill a recording's disk. A person debugging a refusal needs the first
/// ones and the count, not each of a flood.
struct RefusalRowBudget {
    static let defaultPerSecond = 50

    let perSecond: Int
    private var windowStart: UInt64?
    private var shownInWindow = 0
    private var leftOut = 0

    init(perSecond: Int = RefusalRowBudget.defaultPerSecond) {
        self.perSecond = max(1, perSecond)
    }

    /// Whether a refusal at `now` (nanoseconds of a monotonic clock) gets a row: nil if not
    /// (it is counted); else how many were left out since the last row, told with it.
    mutating func take(at now: UInt64) -> Int? {
        if let start = windowStart, now &- start < 1_000_000_000 {
            guard shownInWindow < perSecond else {
                leftOut += 1
                return nil
            }
        } else {
            (windowStart, shownInWindow) = (now, 0)
        }
        shownInWindow += 1
        defer { leftOut = 0 }
        return leftOut
    }
}
