/// How many records the pipeline's worker hands its background destinations in one write, sized by time.
///
/// Whoever waits for the destinations — a log call for room, the exit flush, a shutdown — sees their progress only
/// between two writes. A write of ``PipelineQueue/writeLimit`` records through a slow destination (a terminal over
/// a slow link, a network file system) could outlast the waiter's patience while the destination keeps writing: the
/// call would drop its event, the exit give up. So a write that took longer than ``budget`` — a quarter of the
/// shortest patience that waits for the destinations — makes the next ones smaller, in proportion; one within it
/// lets them grow, twice as large each time, up to ``maximum``. A write then takes at most about twice the budget:
/// half the patience.
///
/// A destination whose writes take long whatever their size (a round trip per write) is not made to write fewer
/// records: once a smaller write, again over the budget, took about as long as the larger one before it, the
/// writes go back to ``maximum`` — smaller ones would not show progress sooner, and would cost throughput.
///
/// The first write after the destinations were set up takes at most ``firstWriteLimit`` records.
package struct WriteSizer {
    /// Records in the first write, before anything was measured.
    package static let firstWriteLimit = 8

    /// The most records in a write (``PipelineQueue/writeLimit``).
    package let maximum: Int
    /// Seconds a write may take.
    package private(set) var budget: Double
    /// The most records the next write may take.
    package private(set) var limit: Int
    /// The last write, when it took longer than the budget.
    private var lastOverBudget: (records: Int, seconds: Double)?

    /// - Parameters:
    ///   - maximum: the most records in a write.
    ///   - fullQueueWait, exitFlushTimeout: the patiences, in seconds, of what waits for the destinations' progress
    ///     (``LogPipeline/Configuration``); one that is not positive and finite (a call that never waits) is left out.
    package init(maximum: Int, fullQueueWait: Double, exitFlushTimeout: Double) {
        self.maximum = max(1, maximum)
        budget = .infinity
        limit = min(self.maximum, Self.firstWriteLimit)
        setPatiences(fullQueueWait: fullQueueWait, exitFlushTimeout: exitFlushTimeout)
    }

    /// The pipeline was reconfigured: the same rule with its patiences.
    package mutating func setPatiences(fullQueueWait: Double, exitFlushTimeout: Double) {
        func waited(_ seconds: Double) -> Double { seconds > 0 && seconds.isFinite ? seconds : .infinity }
        budget = min(waited(fullQueueWait), waited(exitFlushTimeout)) / 4
    }

    /// The destinations changed: they are measured again, from a first write of ``firstWriteLimit``.
    package mutating func restart() {
        limit = min(maximum, Self.firstWriteLimit)
        lastOverBudget = nil
    }

    /// A write of `records` records took `seconds`.
    package mutating func wrote(_ records: Int, in seconds: Double) {
        guard records > 0, seconds >= 0, seconds.isFinite else { return }
        guard seconds > budget else {
            lastOverBudget = nil
            limit = limit >= maximum / 2 ? maximum : limit * 2
            return
        }
        if let last = lastOverBudget, records < last.records, seconds >= last.seconds * 0.75 {
            // Fewer records took about as long: the time is the destination's own per write.
            lastOverBudget = nil
            limit = maximum
            return
        }
        lastOverBudget = (records, seconds)
        limit = max(1, min(limit, Int(Double(records) * budget / seconds)))
    }
}
