// swift-tools-version:6.1
//
// JustLog for Swift: one call site, three destinations (console, rotating files, Logstash over TCP/TLS).
//
// Products are layered so that a program only compiles what it uses:
//   JustLogCore      front end, event value, formats, console + file destinations, pipeline (Foundation only)
//   JustLogLogging   swift-log bridge: a `LogHandler` routing `Logging.Logger` into a JustLogCore pipeline
//   JustLogLogstash  the Logstash destination: disk spool, connection state machines (json_lines, Beats),
//                    NIO + NIOSSL transport
//   JustLog          the documented `Logger.shared` facade over all of the above (and the swift-log bootstrap for it)
//   JustLogTestKit   for users' own tests: a capturing destination, a manual clock
//   justlog          the command-line tool (demo, receive, ship, view, bench)
// Not products: JustLogReceivers (the json_lines and Beats servers of `justlog receive`, the demo and the tests),
// CJustLogZlib (the system zlib, for compressed Beats frames), CJustLogAtomics (the C11 atomics every log call
// reads: the level gate, the fast lane's sequence lock; on Linux also the futex lock it takes), CJustLogCRC32C
// (the records' checksum, by the processor's CRC instruction), CJustLogFiles (the `ioctl` that turns a journal
// segment's copy-on-write off on btrfs) and CJustLogText (JSON escaping's clean prefix, sixteen bytes at a time).
import PackageDescription

let package = Package(
    name: "JustLog",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "JustLogCore", targets: ["JustLogCore"]),
        .library(name: "JustLogLogging", targets: ["JustLogLogging"]),
        .library(name: "JustLogLogstash", targets: ["JustLogLogstash"]),
        .library(name: "JustLog", targets: ["JustLog"]),
        .library(name: "JustLogTestKit", targets: ["JustLogTestKit"]),
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
        .target(
            name: "JustLogCore",
            dependencies: ["CJustLogAtomics", "CJustLogCRC32C", "CJustLogFiles", "CJustLogText"]
        ),
        .target(name: "CJustLogAtomics"),
        .target(name: "CJustLogCRC32C"),
        .target(name: "CJustLogFiles"),
        .target(name: "CJustLogText"),
        .systemLibrary(name: "CJustLogZlib", providers: [.apt(["zlib1g-dev"])]),
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
                "CJustLogZlib",
            ]
        ),
        .target(
            name: "JustLogReceivers",
            dependencies: [
                "JustLogCore", "JustLogLogstash",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "JustLog",
            dependencies: [
                "JustLogCore", "JustLogLogstash", "JustLogLogging",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "JustLogTools",
            dependencies: [
                "JustLog", "JustLogCore", "JustLogLogging", "JustLogLogstash", "JustLogReceivers", "CJustLogAtomics",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .target(name: "JustLogTestKit", dependencies: ["JustLogCore"]),

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
        .target(
            name: "JustLogTestSupport",
            dependencies: ["JustLogCore", "JustLogTestKit"],
            path: "Tests/JustLogTestSupport"
        ),
        .executableTarget(
            name: "JustLogTestChild",
            dependencies: [
                "JustLog", "JustLogCore", "JustLogLogging", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/Fixtures/JustLogTestChild"
        ),
        .testTarget(
            name: "JustLogCoreTests",
            dependencies: ["JustLogCore", "JustLogTestSupport"],
            exclude: ["Golden"]
        ),
        .testTarget(
            name: "JustLogLoggingTests",
            dependencies: [
                "JustLogLogging", "JustLogCore", "JustLogTestSupport", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "JustLogLogstashTests",
            dependencies: [
                "JustLogLogstash", "JustLogCore", "JustLogTestSupport", "JustLogReceivers", "JustLogTools",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "JustLogTests",
            dependencies: [
                "JustLog", "JustLogCore", "JustLogLogstash", "JustLogLogging", "JustLogReceivers", "JustLogTestSupport",
                "JustLogTestChild",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "JustLogToolsTests",
            dependencies: [
                "JustLog", "JustLogTools", "JustLogCore", "JustLogLogstash", "JustLogReceivers", "JustLogTestSupport",
                "JustLogCLI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ]
)

// One strict setting for every target (as swift-log does): Swift 6 mode comes from the tools version.
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}

// The documentation plugin only where the docs are built (`Scripts/build-docs`, CI), so that users of the
// package never resolve it.
if Context.environment["JUSTLOG_DOCS"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}
