// swift-tools-version:6.0
// The parsers under libFuzzer. Built and run by run.sh (it adds -sanitize=fuzzer); kept
// out of the main package so `swift build` there never needs the fuzzer runtime.
import PackageDescription

let package = Package(
    name: "reqtop-fuzz",
    dependencies: [.package(name: "reqtop", path: "../..")],
    targets: [
        .executableTarget(
            name: "reqtop-fuzz",
            dependencies: [.product(name: "ParserFuzzing", package: "reqtop")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ]
)
