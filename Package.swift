// swift-tools-version:6.1
//
// JustLog for Swift: one call site, three destinations (console, rotating files, Logstash over TCP/TLS).
//
// Products are layered so that a program only compiles what it uses:
//   JustLogCore      front end, event value, formats, console + file destinations, pipeline (Foundation only)
//   JustLogLogging   swift-log bridge: a `LogHandler` routing `Logging.Logger` into a JustLogCore pipeline
//   JustLogLogstash  the Logstash destination: disk spool, connection state machine, NIO + NIOSSL transport
//   JustLog          the documented `Logger.shared` facade over all of the above
//   justlog          the command-line tool (demo, receive, ship, view, bench)
import PackageDescription

let package = Package(
    name: "JustLog",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "JustLogCore", targets: ["JustLogCore"]),
        .library(name: "JustLogLogging", targets: ["JustLogLogging"]),
        .library(name: "JustLogLogstash", targets: ["JustLogLogstash"]),
        .library(name: "JustLog", targets: ["JustLog"]),
        .executable(name: "justlog", targets: ["JustLogCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Counts allocations for `justlog bench` only (linked into the command-line tool, never a library).
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.6.0"),
    ],
    targets: [
        // MARK: - Libraries
        .target(name: "JustLogCore"),
        .target(
            name: "JustLogLogging",
            dependencies: ["JustLogCore", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "JustLogLogstash",
            dependencies: [
                "JustLogCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "JustLog",
            dependencies: [
                "JustLogCore", "JustLogLogstash",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "JustLogTools",
            dependencies: [
                "JustLog", "JustLogCore", "JustLogLogging", "JustLogLogstash", .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: - Command-line tool
        .executableTarget(
            name: "JustLogCLI",
            dependencies: [
                "JustLogTools",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ]
        ),

        // MARK: - Tests
        .target(name: "JustLogTestSupport", dependencies: ["JustLogCore"], path: "Tests/JustLogTestSupport"),
        .executableTarget(name: "JustLogTestChild", dependencies: ["JustLog", "JustLogCore"], path: "Tests/Fixtures/JustLogTestChild"),
        .testTarget(name: "JustLogCoreTests", dependencies: ["JustLogCore", "JustLogTestSupport"], exclude: ["Golden"]),
        .testTarget(
            name: "JustLogLoggingTests",
            dependencies: ["JustLogLogging", "JustLogCore", "JustLogTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "JustLogLogstashTests",
            dependencies: [
                "JustLogLogstash", "JustLogCore", "JustLogTestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "JustLogTests",
            dependencies: [
                "JustLog", "JustLogCore", "JustLogLogstash", "JustLogTestSupport", "JustLogTestChild",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "JustLogToolsTests",
            dependencies: [
                "JustLog", "JustLogTools", "JustLogCore", "JustLogLogstash", "JustLogTestSupport", "JustLogCLI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ]
)

// One strict setting for every target (as swift-log does): Swift 6 mode comes from the tools version.
for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
