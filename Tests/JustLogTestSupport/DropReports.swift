import Foundation
public import JustLogCore

/// What JustLog's drop reports among `records` say was dropped (their `dropped_events`), added up: a test compares it
/// with `currentStatistics.dropped` (every drop counted is reported).
public func reportedDrops(in records: [LogRecord]) -> UInt64 {
    records.reduce(0) { sum, record in
        guard case .uint(let count)? = record.userInfo["dropped_events"] else { return sum }
        return sum + count
    }
}

/// Whether this test process runs under ThreadSanitizer (its runtime is linked in): a test may make fewer calls there.
public let underThreadSanitizer = dlsym(nil, "__tsan_init") != nil
