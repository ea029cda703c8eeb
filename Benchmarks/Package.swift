// swift-tools-version:6.1
//
// JustLog's benchmarks (ordo-one/benchmark): per call, instructions (where perf events exist), allocations and
// wall time; and end-to-end throughput. Kept out of the library's package so that its users never resolve
// the benchmark tooling. BENCHMARKS.md (at the repository root) says how to run it and what each figure means.
//
//   cd Benchmarks && swift package benchmark                     # run everything
//   cd Benchmarks && swift package benchmark thresholds check    # fail on a regression (run from this folder:
//                                                                  # the thresholds are read from ./Thresholds)
//   Benchmarks/callgrind.sh                                              # instructions per call (valgrind)
import PackageDescription

let package = Package(
    name: "JustLogBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "JustLog", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", .upToNextMinor(from: "1.38.0"), traits: ["MallocInterposer"]),
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
    ],
    targets: [
        .executableTarget(
            name: "LogCallBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
                .product(name: "JustLog", package: "JustLog"),
                .product(name: "JustLogCore", package: "JustLog"),
                .product(name: "JustLogLogging", package: "JustLog"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/LogCallBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
