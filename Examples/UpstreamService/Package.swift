// swift-tools-version: 6.1
import PackageDescription

// A small HTTP service that calls its upstreams through reqtop and can be watched with
// `reqtop attach`. Its own package, with a path dependency on reqtop, so that reqtop's own
// build does not build Hummingbird.
let package = Package(
    name: "UpstreamService",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "reqtop", path: "../.."),
        // No default traits: the service needs neither swift-configuration nor more Foundation.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0", traits: []),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .executableTarget(
            name: "UpstreamService",
            dependencies: [
                .product(name: "RequestOperations", package: "reqtop"),
                .product(name: "RequestEndpoint", package: "reqtop"),
                .product(name: "RequestLogging", package: "reqtop"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
