#if canImport(CMallocTuning)
import CMallocTuning
#endif

/// How the proxy's process keeps memory it frees, for uploads and downloads of any size.
///
/// Each read of a bulk transfer (up to 1 MiB) is handed on without a copy, so the connection
/// reads the next into a new buffer. With glibc's defaults that buffer came fresh from the
/// kernel each time — a 1 MiB allocation is mapped on its own, and freed memory at the top of
/// the heap is given back past 128 KiB — and every page of it was faulted in and zeroed: an
/// eighth of the proxy's CPU moving 1 GiB up (docs/benchmarks.md). Allocations under 2 MiB now
/// come from the heap, and up to 32 MiB freed at its top is kept for the next: the process's
/// memory stays at its high-water mark instead of going back and forth, flat all the same.
enum ProxyMemory {
    static let mapAbove: Int32 = 2 << 20
    static let keepFreed: Int32 = 32 << 20

    /// Sets glibc's thresholds once, before the proxy starts (nothing on other C libraries).
    static func keepFreedMemoryForReuse() {
        #if os(Linux) && canImport(CMallocTuning)
        _ = mallopt(M_MMAP_THRESHOLD, mapAbove)
        _ = mallopt(M_TRIM_THRESHOLD, keepFreed)
        #endif
    }
}
