// swift-tools-version: 6.1
import PackageDescription

// reqtop: HTTP requests as Operations over one shared URLSession, and a terminal monitor.
// The modules and what each may depend on are in ARCHITECTURE.md: the engine
// (RequestOperations) depends on Foundation (and swift-http-types) only and everything else on it, never the other
// way; SwiftNIO is used by the fault server and the NIO transport only; the command line ties
// them together.

/// The modules the application library and its command line both read with.
let applicationModules: [Target.Dependency] = [
    "RequestOperations", "RequestEventFormat", "ProcessSignals", "RequestMonitor", "RequestArchive", "RequestEndpoint",
    "RequestTransportNIO", "FaultServer",
]

let package = Package(
    name: "reqtop",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RequestOperations", targets: ["RequestOperations"]),
        .library(name: "FaultServer", targets: ["FaultServer"]),
        .library(name: "RequestMonitor", targets: ["RequestMonitor"]),
        .library(name: "RequestEventFormat", targets: ["RequestEventFormat"]),
        .library(name: "RequestArchive", targets: ["RequestArchive"]),
        .library(name: "RequestEndpoint", targets: ["RequestEndpoint"]),
        .library(name: "RequestLogging", targets: ["RequestLogging"]),
        .library(name: "RequestTracing", targets: ["RequestTracing"]),
        .library(name: "RequestMetrics", targets: ["RequestMetrics"]),
        .library(name: "RequestTransportNIO", targets: ["RequestTransportNIO"]),
        .library(name: "RequestProxy", targets: ["RequestProxy"]),
        .executable(name: "reqtop", targets: ["reqtop"]),
        // The parsers as fuzz targets, for scripts/fuzz (libFuzzer) and the tests.
        .library(name: "ParserFuzzing", targets: ["ParserFuzzing"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        // OTLP/HTTP only: the gRPC exporter would build grpc-swift and more for nothing.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        // `swift package generate-documentation`: the library's DocC catalogs (CI checks their links).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        // TLS: the NIO transport's trust roots and client certificates, the fault server's TLS,
        // and certificates made at test time (never committed keys).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.27.0"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.30.0"),
        // HTTPFields <-> NIO's HTTPHeaders, in order (trailers both ways through the NIO transport and the proxy).
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.24.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
        // Header fields in order, repeats apart, names as spelled: what the proxy relays.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        // DER for the certificates made at run time (swift-certificates builds on it).
        .package(url: "https://github.com/apple/swift-asn1", from: "1.0.0"),
    ],
    targets: [
        .target(name: "RequestOperations", dependencies: [.product(name: "HTTPTypes", package: "swift-http-types")]),
        .target(name: "RequestEventFormat", dependencies: ["RequestOperations", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .target(name: "ProcessSignals"),
        // No pkgConfig: its -D flags are ones SwiftPM refuses (a warning on every build); the
        // shim defines what they would, and the module map links ncursesw and tinfo.
        .systemLibrary(
            name: "CNCurses",
            providers: [.apt(["libncurses-dev"])]
        ),
        // glibc's mallopt, for the proxy's bulk transfers (ProxyCommand+Memory.swift).
        .systemLibrary(name: "CMallocTuning"),
        .target(name: "RequestMonitor", dependencies: ["RequestOperations", "RequestEventFormat", "RequestArchive", "ProcessSignals", "CNCurses",
                                                       .product(name: "HTTPTypes", package: "swift-http-types")]),
        .target(name: "RequestArchive", dependencies: ["RequestOperations", "RequestEventFormat", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .target(name: "RequestEndpoint", dependencies: [
            "RequestOperations", "RequestEventFormat", "ChannelGlue",
            // The endpoint over TLS (`--listen-on tls://`): mutual TLS on SwiftNIO, the peer's
            // certificate read with swift-certificates.
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOTLS", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "X509", package: "swift-certificates"),
        ]),
        // Two channels glued into one pipe (the proxy's tunnels, the endpoint's TLS peers).
        .target(name: "ChannelGlue", dependencies: [.product(name: "NIOCore", package: "swift-nio"),
                                                    .product(name: "NIOHTTP2", package: "swift-nio-http2")]),
        // The second transport: the engine's seam, carried by AsyncHTTPClient.
        .target(name: "RequestTransportNIO", dependencies: [
            .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            "RequestOperations",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            // AsyncHTTPClient names a request's connection only in its request logger's metadata.
            .product(name: "Logging", package: "swift-log"),
        ]),
        // swift-log for programs that embed the engine; the engine itself stays Foundation-only.
        .target(name: "RequestLogging", dependencies: ["RequestOperations", "RequestEventFormat", .product(name: "Logging", package: "swift-log")]),
        // Spans per attempt on swift-distributed-tracing (the API only: the program picks the backend).
        .target(name: "RequestTracing", dependencies: ["RequestOperations", "RequestEventFormat", .product(name: "Tracing", package: "swift-distributed-tracing"),
                                                 .product(name: "Instrumentation", package: "swift-distributed-tracing")]),
        // Metrics from the events on swift-metrics (the API only: the program picks the backend).
        .target(name: "RequestMetrics", dependencies: ["RequestOperations", .product(name: "CoreMetrics", package: "swift-metrics")]),
        // `reqtop proxy`: an HTTP/1.1 forward proxy whose upstream leg is the engine's
        // operation; its own certificate authority for intercepted HTTPS.
        .target(name: "RequestProxy", dependencies: [
            "RequestTransportNIO",
            .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            "RequestOperations",
            "RequestArchive",
            "ChannelGlue",
            "CertificateMint",
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
            .product(name: "NIOTLS", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // An authority of this machine's own and the leaves it signs (the proxy's, the fault server's).
        .target(name: "CertificateMint", dependencies: [
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .target(
            name: "FaultServer",
            dependencies: [
                "ChannelGlue",
                "CertificateMint",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The application's work with no command line: plans, what-if, diff, replay and
        // re-sending, attaching to several programs, the demo, and the monitor or headless
        // session a command runs under. ReqtopCLI keeps the commands and their options.
        .target(
            name: "ReqtopApplication",
            dependencies: applicationModules + [.product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .target(
            name: "ReqtopCLI",
            dependencies: ["ReqtopApplication"] + applicationModules + [
                "RequestProxy",
                "CMallocTuning",
                "RequestTracing",
                "RequestMetrics",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "reqtop", dependencies: ["ReqtopCLI", "ProcessSignals"]),
        .target(name: "ParserFuzzing", dependencies: ["ReqtopApplication", "RequestArchive", "RequestEndpoint", "RequestEventFormat", "RequestMonitor", "RequestOperations"]),
        .executableTarget(
            name: "reqtop-bench",
            dependencies: ["RequestOperations", "RequestEventFormat", "RequestEndpoint", "RequestTransportNIO", "FaultServer", "RequestTracing", "RequestMetrics",
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
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
        .testTarget(name: "ParserFuzzingTests", dependencies: ["ParserFuzzing"]),
        .testTarget(name: "RequestOperationsTests", dependencies: ["RequestOperations", "RequestTransportNIO", "FaultServer", "ChannelGlue",
                                                                 .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                                                                 .product(name: "NIOSSL", package: "swift-nio-ssl")]),
        .testTarget(name: "RequestEventFormatTests", dependencies: ["RequestEventFormat", "RequestOperations",
                                                             .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "FaultServerTests", dependencies: ["FaultServer"]),
        .testTarget(name: "RequestMonitorTests", dependencies: ["RequestMonitor", "RequestOperations", "RequestEndpoint",
                                                         .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(
            name: "RequestArchiveTests",
            dependencies: ["RequestArchive", "RequestEventFormat", "RequestOperations"],
            resources: [.copy("Fixtures")]
        ),
        // The application's tests need no command line: plans, the demo, merging programs, re-sending.
        .testTarget(name: "ReqtopApplicationTests", dependencies: ["ReqtopApplication", "RequestOperations", "RequestEventFormat", "RequestArchive", "FaultServer"]),
        .testTarget(name: "ReqtopCLITests", dependencies: ["ReqtopCLI", "ReqtopApplication", "RequestOperations", "RequestEventFormat", "RequestMonitor", "RequestArchive", "RequestEndpoint", "RequestProxy", "FaultServer"]),
        .testTarget(name: "RequestLoggingTests", dependencies: ["RequestLogging", "RequestOperations", "FaultServer", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "RequestTracingTests", dependencies: ["RequestTracing", "RequestOperations", "FaultServer",
                                                                .product(name: "Tracing", package: "swift-distributed-tracing"),
                                                                .product(name: "InMemoryTracing", package: "swift-distributed-tracing")]),
        .testTarget(name: "RequestMetricsTests", dependencies: ["RequestMetrics", "RequestOperations", "FaultServer",
                                                                .product(name: "MetricsTestKit", package: "swift-metrics"),
                                                                .product(name: "CoreMetrics", package: "swift-metrics")]),
        .testTarget(name: "RequestProxyTests", dependencies: ["RequestProxy", "RequestOperations", "RequestEventFormat", "RequestTransportNIO", "FaultServer",
                                                                  .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOCore", package: "swift-nio")]),
        .testTarget(name: "RequestEndpointTests", dependencies: ["RequestEndpoint", "RequestEventFormat", "RequestOperations", "FaultServer"]),
    ],
    swiftLanguageModes: [.v6]
)
