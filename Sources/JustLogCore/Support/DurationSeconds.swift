extension Duration {
    /// The duration in seconds, fractions included: for messages, rates and waits given in seconds.
    package var totalSeconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
