import Synchronization

/// Where jitter comes from. Inject ``SeededRandomSource`` in tests for exact delays.
public protocol RandomSource: Sendable {
    /// A uniformly distributed value in `0 ..< 1`.
    func nextUnit() -> Double
}

extension RandomSource {
    /// A uniformly distributed value in `lower ... upper` (or `lower` when the range is empty).
    public func uniform(_ lower: Double, _ upper: Double) -> Double {
        upper > lower ? lower + (upper - lower) * nextUnit() : lower
    }
}

/// The system's cryptographic generator: the default.
public struct SystemRandomSource: RandomSource {
    public init() {}

    public func nextUnit() -> Double {
        Double.random(in: 0..<1)
    }
}

/// A deterministic SplitMix64 sequence, so that the same seed gives the same jitter.
public final class SeededRandomSource: RandomSource {
    private let state: Mutex<UInt64>

    public init(seed: UInt64) {
        state = Mutex(seed)
    }

    public func nextUnit() -> Double {
        let bits = state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return Double(bits >> 11) / Double(1 << 53)
    }
}

/// Always the same value: for tests that want a jittered delay pinned to one point.
public struct ConstantRandomSource: RandomSource {
    public let value: Double

    public init(_ value: Double) {
        precondition((0..<1).contains(value), "a unit value is in 0 ..< 1")
        self.value = value
    }

    public func nextUnit() -> Double { value }
}
