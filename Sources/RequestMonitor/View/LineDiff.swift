import Foundation

/// A line diff of two texts as `diff -u` makes one (Myers' algorithm: the shortest edit
/// script), laid out side by side: equal lines together, a run of removed lines beside the
/// run of added lines that replaced it, and what is left of either run alone. One inserted
/// line is one line marked, not every line after it.
enum LineDiff {
    enum Row: Equatable {
        case same(String)
        /// A line replaced by another.
        case changed(String, String)
        /// Only on the left (removed) or only on the right (added).
        case onlyLeft(String)
        case onlyRight(String)
    }

    /// Past this many differences the diff stops looking for the shortest script and pairs
    /// the rest line by line: two unrelated 100,000-line bodies cost no more than a glance.
    static let maximumEdits = 4_000

    static func rows(_ left: [String], _ right: [String]) -> [Row] {
        guard let script = editScript(left, right) else {
            return (0..<max(left.count, right.count)).map { index in
                switch (index < left.count ? left[index] : nil, index < right.count ? right[index] : nil) {
                case (let l?, let r?): l == r ? .same(l) : .changed(l, r)
                case (let l?, nil): .onlyLeft(l)
                case (nil, let r?): .onlyRight(r)
                case (nil, nil): .same("")
                }
            }
        }
        var rows: [Row] = []
        var removed: [String] = [], added: [String] = []
        func flush() {
            for index in 0..<max(removed.count, added.count) {
                switch (index < removed.count ? removed[index] : nil, index < added.count ? added[index] : nil) {
                case (let l?, let r?): rows.append(.changed(l, r))
                case (let l?, nil): rows.append(.onlyLeft(l))
                case (nil, let r?): rows.append(.onlyRight(r))
                case (nil, nil): break
                }
            }
            (removed, added) = ([], [])
        }
        for step in script {
            switch step {
            case .keep(let index):
                flush()
                rows.append(.same(left[index]))
            case .remove(let index): removed.append(left[index])
            case .add(let index): added.append(right[index])
            }
        }
        flush()
        return rows
    }

    enum Step: Equatable {
        case keep(Int), remove(Int), add(Int)
    }

    /// Myers' O((N+M)·D) shortest edit script, or nil past ``maximumEdits``.
    static func editScript(_ a: [String], _ b: [String]) -> [Step]? {
        let n = a.count, m = b.count, maximum = min(n + m, maximumEdits)
        let offset = maximum + 1
        var v = [Int](repeating: 0, count: 2 * maximum + 3)
        var trace: [[Int]] = []
        var found = false
        for d in 0...maximum {
            trace.append(v)
            for k in stride(from: -d, through: d, by: 2) {
                var x = k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1
                var y = x - k
                while x < n, y < m, a[x] == b[y] { (x, y) = (x + 1, y + 1) }
                v[offset + k] = x
                if x >= n, y >= m {
                    found = true
                    break
                }
            }
            if found { break }
        }
        guard found else { return nil }
        // Back from the end through each round's furthest points.
        var steps: [Step] = []
        var (x, y) = (n, m)
        for d in stride(from: trace.count - 1, through: 0, by: -1) {
            let v = trace[d], k = x - y
            let previousK = k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]) ? k + 1 : k - 1
            let previousX = d == 0 ? 0 : v[offset + previousK], previousY = previousX - previousK
            while x > previousX, y > previousY {
                (x, y) = (x - 1, y - 1)
                steps.append(.keep(x))
            }
            if d > 0 {
                if x == previousX { steps.append(.add(previousY)) } else { steps.append(.remove(previousX)) }
            }
            (x, y) = (previousX, previousY)
        }
        return steps.reversed()
    }
}
