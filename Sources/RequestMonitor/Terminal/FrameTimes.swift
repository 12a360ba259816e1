import Foundation
import Synchronization

/// How long each drawn frame's turn took (the inputs taken in, the update, the view, and
/// handing the frame to ncurses, which writes it to the terminal): what the fleet benchmark
/// reads (`REQTOP_FRAME_STATS=FILE reqtop attach --all`).
public final class FrameTimes: Sendable {
    /// Nanoseconds: the whole turn, the part spent writing to the terminal, and the CPU the
    /// drawing thread used in the turn (wall time less what it waited for a core).
    private let frames = Mutex<[(turn: UInt64, drawing: UInt64, cpu: UInt64)]>([])

    public init() {}

    func add(turn: UInt64, drawing: UInt64, cpu: UInt64) {
        frames.withLock { $0.append((turn, drawing, cpu)) }
    }

    /// This thread's CPU time, nanoseconds.
    static func threadCPU() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The whole turn's p50, p99 and slowest, then the monitor's own part (without the write
    /// to the terminal, which waits on the terminal program: tmux here).
    public var summary: String {
        let all = frames.withLock { $0 }
        guard !all.isEmpty else { return "frames 0" }
        func stats(_ values: [UInt64]) -> String {
            let sorted = values.sorted()
            func at(_ fraction: Double) -> Double { Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]) / 1e6 }
            return String(format: "p50 %.2f ms, p99 %.2f ms, slowest %.2f ms", at(0.5), at(0.99), Double(sorted.last!) / 1e6)
        }
        return "frames \(all.count): whole turn \(stats(all.map(\.turn))); without the terminal's write \(stats(all.map { $0.turn - $0.drawing })); "
            + "CPU of the turn \(stats(all.map(\.cpu)))"
    }
}
