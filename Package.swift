// swift-tools-version: 6.0
import PackageDescription

// reqtop: HTTP requests as Operations over one shared URLSession, and a terminal monitor.
// Module boundaries follow DESIGN.md: the engine depends on Foundation only; the fault
// server is the only user of SwiftNIO; the command line ties them together.
let package = Package(
    name: "reqtop",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RequestOperations", targets: ["RequestOperations"]),
        .library(name: "FaultServer", targets: ["FaultServer"]),
        .library(name: "RequestMonitor", targets: ["RequestMonitor"]),
        .library(name: "RequestArchive", targets: ["RequestArchive"]),
        .library(name: "RequestEndpoint", targets: ["RequestEndpoint"]),
        .executable(name: "reqtop", targets: ["reqtop"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .target(name: "RequestOperations"),
        .systemLibrary(
            name: "CNCurses",
            pkgConfig: "ncursesw",
            providers: [.apt(["libncurses-dev"])]
        ),
        .target(name: "RequestMonitor", dependencies: ["RequestOperations", "CNCurses"]),
        .target(name: "RequestArchive", dependencies: ["RequestOperations"]),
        .target(name: "RequestEndpoint", dependencies: ["RequestOperations"]),
        .target(
            name: "FaultServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "ReqtopCLI",
            dependencies: [
                "RequestOperations",
                "RequestMonitor",
                "RequestArchive",
                "RequestEndpoint",
                "FaultServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "reqtop", dependencies: ["ReqtopCLI", "RequestMonitor"]),
        .executableTarget(
            name: "reqtop-bench",
            dependencies: ["RequestOperations", "RequestEndpoint", "FaultServer"],
            path: "Benchmarks/ThroughputBenchmark"
        ),
        .executableTarget(
            name: "reqtop-monitor-bench",
            dependencies: ["RequestMonitor", "RequestOperations"],
            path: "Benchmarks/MonitorBenchmark"
        ),
        .executableTarget(
            name: "reqtop-archive-bench",
            dependencies: ["RequestArchive"],
            path: "Benchmarks/ArchiveBenchmark"
        ),
        .testTarget(name: "RequestOperationsTests", dependencies: ["RequestOperations", "FaultServer"]),
        .testTarget(name: "FaultServerTests", dependencies: ["FaultServer"]),
        .testTarget(name: "RequestMonitorTests", dependencies: ["RequestMonitor", "RequestOperations"]),
        .testTarget(
            name: "RequestArchiveTests",
            dependencies: ["RequestArchive", "RequestOperations"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(name: "ReqtopCLITests", dependencies: ["ReqtopCLI", "RequestOperations", "RequestMonitor", "RequestArchive", "RequestEndpoint", "FaultServer"]),
        .testTarget(name: "RequestEndpointTests", dependencies: ["RequestEndpoint", "RequestOperations", "FaultServer"]),
    ],
    swiftLanguageModes: [.v6]
)
