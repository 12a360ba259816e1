import Foundation

/// A short, deterministic fuzz run of one target without coverage feedback, for `swift
/// test`: mutate the seeds, keep inputs the target accepted (they reach deeper code) in a
/// small pool, stop at a count or a time, whichever comes first. A crash ends the test
/// process, which fails the run loudly; a slow input is reported as a hang.
///
/// The long runs, with coverage feedback, are libFuzzer's (`scripts/fuzz/run.sh`).
public struct FuzzCampaign {
    public struct Report: Sendable {
        public var target: FuzzTarget
        /// Inputs run, seeds included.
        public var inputs = 0
        /// Inputs the target read without an error.
        public var accepted = 0
        /// Inputs that took longer than the hang threshold.
        public var hangs: [Data] = []
        /// The slowest input's time, in seconds.
        public var slowest: TimeInterval = 0
        public var seconds: TimeInterval = 0
    }

    public var target: FuzzTarget
    public var seeds: [Data]
    public var maxInputs: Int
    public var maxSeconds: TimeInterval
    /// An input slower than this twice in a row counts as a hang (generous: debug builds are slow).
    public var hangThreshold: TimeInterval = 2
    public var randomSeed: UInt64 = 0x5EED

    public init(target: FuzzTarget, seeds: [Data], maxInputs: Int, maxSeconds: TimeInterval) {
        self.target = target
        self.seeds = seeds.isEmpty ? [Data()] : seeds
        self.maxInputs = maxInputs
        self.maxSeconds = maxSeconds
    }

    public func run() -> Report {
        var report = Report(target: target)
        var mutator = Mutator(seed: randomSeed, seeds: seeds)
        var pool = seeds
        let start = Date()
        var index = 0
        func runOne(_ input: Data) -> Bool {
            let began = Date()
            let accepted = target.run(input)
            let took = Date().timeIntervalSince(began)
            report.inputs += 1
            if accepted { report.accepted += 1 }
            report.slowest = max(report.slowest, took)
            // A slow input is timed again before it counts: a busy machine (CI runs tests
            // beside other jobs) can stall one run, but a real hang is slow every time.
            if took > hangThreshold {
                let again = Date()
                _ = target.run(input)
                if Date().timeIntervalSince(again) > hangThreshold { report.hangs.append(input) }
            }
            return accepted
        }
        for seed in seeds { _ = runOne(seed) }
        while report.inputs < maxInputs, Date().timeIntervalSince(start) < maxSeconds {
            let base = pool[index % pool.count]
            let other = pool[(index * 7 + 3) % pool.count]
            index += 1
            let input = mutator.mutate(base, other: other)
            if runOne(input), pool.count < 256, index % 4 == 0 { pool.append(input) }
        }
        report.seconds = Date().timeIntervalSince(start)
        return report
    }

    /// The seed files of a corpus folder (one file per seed), in name order.
    public static func seeds(in folder: URL) -> [Data] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.compactMap { try? Data(contentsOf: folder.appendingPathComponent($0)) }
    }
}
