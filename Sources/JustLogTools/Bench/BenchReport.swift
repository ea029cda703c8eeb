import Foundation

/// What ``BenchSuite`` measured: the side-by-side table, or one JSON object for other programs.
package struct BenchReport: Sendable {
    package var calls: [CallMeasurement]
    package var concurrency: ConcurrencyMeasurement
    package var throughput: ThroughputMeasurement
    package var machine: Machine
    package var options: BenchSuite.Options
    /// How allocations were counted, or why they weren't.
    package var allocationCounter: String

    package func call(_ key: String) -> CallMeasurement? { calls.first { $0.key == key } }

    /// The machine a report comes from.
    package struct Machine: Sendable {
        package var cpu: String
        package var cores: Int
        package var system: String
        package var build: String
        /// `/proc/loadavg`'s 1, 5 and 15-minute load averages when the run started: other work on the machine
        /// moves times (not instruction or allocation counts).
        package var loadAverage: String

        package static var current: Machine {
            let cpuInfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
            let model = cpuInfo.split(separator: "\n")
                .first { $0.hasPrefix("model name") }
                .flatMap { $0.split(separator: ":", maxSplits: 1).last }
                .map { $0.trimmingCharacters(in: .whitespaces) }
            var system = utsname()
            uname(&system)
            let field = { (value: Any) -> String in
                String(
                    Mirror(reflecting: value).children.compactMap { $0.value as? CChar }
                        .prefix { $0 != 0 }.map { Character(UnicodeScalar(UInt8(bitPattern: $0))) }
                )
            }
            #if DEBUG
            let build = "debug"
            #else
            let build = "release"
            #endif
            let load = ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "")
                .split(separator: " ").prefix(3).joined(separator: " ")
            return Machine(
                cpu: model ?? field(system.machine),
                cores: ProcessInfo.processInfo.activeProcessorCount,
                system: "\(field(system.sysname)) \(field(system.release)) \(field(system.machine))",
                build: build,
                loadAverage: load.isEmpty ? "unknown" : load
            )
        }
    }

    // MARK: - JSON

    /// One JSON object. The keys `hot_path_ns_p50`, `hot_path_allocs`, `filtered_allocs`, `file_events_per_s`,
    /// `file_limit_events_per_s`, `tcp_events_per_s`, `streamloghandler_ns_p50` and `machine` are read by
    /// other programs: keep them. `hot_path` is `Logger.shared.info("user signed in", userInfo: ["userID": 42,
    /// "plan": "gold", "attempt": 1])` with file and Logstash on. Allocation counts are `null` when the
    /// process could not count them. `spool_bytes_per_event` is what the crash-safe store takes on disk per
    /// event, frames included: today the Logstash spool (the journal of issue #8 will report under this name).
    package var json: String {
        var object: [String: Any] = [:]
        for call in calls {
            object["\(call.key)_ns_p50"] = call.nanosecondsP50
            object["\(call.key)_ns_p99"] = call.nanosecondsP99
            object["\(call.key)_allocs"] = call.allocationsPerCall ?? NSNull()
            object["\(call.key)_alloc_bytes"] = call.allocatedBytesPerCall ?? NSNull()
        }
        if let hot = call("hot_path"), let baseline = call("streamloghandler"), hot.nanosecondsP50 > 0 {
            object["streamloghandler_over_hot_path_p50"] = baseline.nanosecondsP50 / hot.nanosecondsP50
        }
        object["hot_path_calls_per_s_1_thread"] = concurrency.documented.oneThreadCallsPerSecond
        object["hot_path_calls_per_s_threads"] = concurrency.documented.manyThreadsCallsPerSecond
        object["hot_path_threads_ratio_median_round"] = concurrency.documented.medianRoundRatio
        object["hot_path_threads"] = concurrency.threads
        object["literal_calls_per_s_1_thread"] = concurrency.literal.oneThreadCallsPerSecond
        object["literal_calls_per_s_threads"] = concurrency.literal.manyThreadsCallsPerSecond
        object["literal_threads_ratio_median_round"] = concurrency.literal.medianRoundRatio
        object["file_events_per_s"] = throughput.fileEventsPerSecond
        object["file_limit_events_per_s"] = throughput.fileLimitEventsPerSecond
        object["file_line_bytes"] = throughput.fileLineBytes
        object["logstash_events_per_s"] = throughput.logstashEventsPerSecond
        object["tcp_events_per_s"] = throughput.tcpLimitEventsPerSecond
        object["wire_line_bytes"] = throughput.wireLineBytes
        object["spool_bytes_per_event"] = throughput.logstashSpoolBytesPerEvent
        object["machine"] =
            [
                "cpu": machine.cpu, "cores": machine.cores, "system": machine.system, "build": machine.build,
                "load_average": machine.loadAverage,
            ] as [String: Any]
        object["call_samples"] = options.callSamples
        object["allocation_calls"] = options.allocationCalls
        object["throughput_events"] = options.throughputEvents
        object["allocation_counter"] = allocationCounter
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted]))
            ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    // MARK: - Table

    /// The side-by-side table: per-call costs with their ratio to `StreamLogHandler`, then throughput with its
    /// ratio to the limit of the same bytes written without a logger.
    package var table: String {
        let baseline = call("streamloghandler")?.nanosecondsP50 ?? 0
        var perCall = Table(headers: [
            "per call (caller's thread)", "ns p50", "ns p99", "allocs", "bytes", "StreamLogHandler p50 ÷ this",
        ])
        for call in calls {
            perCall.add([
                call.label,
                Self.format(call.nanosecondsP50, decimals: 0),
                Self.format(call.nanosecondsP99, decimals: 0),
                call.allocationsPerCall.map { Self.format($0, decimals: 1) } ?? "n/a",
                call.allocatedBytesPerCall.map { Self.format($0, decimals: 0) } ?? "n/a",
                call.nanosecondsP50 > 0 && baseline > 0
                    ? Self.format(baseline / call.nanosecondsP50, decimals: 2) + "×" : "",
            ])
        }
        var parallel = Table(headers: ["caller threads at once", "calls/s", "÷ 1 thread", "median round"])
        let documented = concurrency.documented
        parallel.add([
            "documented call, 1 thread", Self.format(documented.oneThreadCallsPerSecond, decimals: 0), "1", "",
        ])
        parallel.add([
            "documented call, \(concurrency.threads) threads",
            Self.format(documented.manyThreadsCallsPerSecond, decimals: 0),
            Self.format(documented.ratio, decimals: 2), Self.format(documented.medianRoundRatio, decimals: 2),
        ])
        parallel.add([
            "baseline: the literal alone, \(concurrency.threads) threads (threads that share nothing)",
            Self.format(concurrency.literal.manyThreadsCallsPerSecond, decimals: 0),
            Self.format(concurrency.literal.ratio, decimals: 2),
            Self.format(concurrency.literal.medianRoundRatio, decimals: 2),
        ])
        var ends = Table(headers: ["end to end (\(throughput.events) events)", "events/s", "÷ limit"])
        let rate = { (value: Double) in Self.format(value, decimals: 0) }
        ends.add([
            "JustLog → rotating file (\(throughput.fileLineBytes + 1)-byte lines)",
            rate(throughput.fileEventsPerSecond),
            Self.format(throughput.fileEventsPerSecond / throughput.fileLimitEventsPerSecond, decimals: 3),
        ])
        ends.add(["limit: the same lines, 64 KiB write(2) calls", rate(throughput.fileLimitEventsPerSecond), "1"])
        ends.add([
            "JustLog → Logstash, loopback sink (\(throughput.wireLineBytes + 1)-byte lines)",
            rate(throughput.logstashEventsPerSecond),
            Self.format(throughput.logstashEventsPerSecond / throughput.tcpLimitEventsPerSecond, decimals: 3),
        ])
        ends.add(["limit: the same lines, 64 KiB writes to the socket", rate(throughput.tcpLimitEventsPerSecond), "1"])
        return perCall.text + "\n" + parallel.text + "\n" + ends.text
            + "\nLogstash spool: \(Self.format(throughput.logstashSpoolBytesPerEvent, decimals: 1)) bytes per event (frame included)."
            + "\nAllocations: \(allocationCounter); mean of \(options.allocationCalls) calls. Times: \(options.callSamples) calls, each timed alone."
            + "\nMachine: \(machine.cpu), \(machine.cores) cores, \(machine.system), \(machine.build) build, load average \(machine.loadAverage) at the start.\n"
    }

    private static func format(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "-" }
        let text = String(format: "%.\(decimals)f", value)
        guard decimals == 0, value >= 10_000 else { return text }
        // Thousands separators for the large figures.
        var digits = Array(text)
        var index = digits.count - 3
        while index > 0 {
            digits.insert(",", at: index)
            index -= 3
        }
        return String(digits)
    }
}
