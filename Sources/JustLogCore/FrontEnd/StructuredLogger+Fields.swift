/// Typed fields: the same events as `userInfo`, for a fraction of the caller's cost.
///
/// `userInfo: ["userID": 42, "plan": "gold"]` builds a `[String: Any]` at the call site — hashing each key, boxing
/// each value — which costs the caller more than the rest of the log call. `fields:` takes the same literal as
/// `KeyValuePairs<String, LogValue>`: an array of pairs, typed as the literal is written, which the log call
/// encodes as it goes. The event, the file line and the Logstash line are the ones `userInfo` gives for the
/// same values; a key given twice keeps its last value.
///
/// ```swift
/// logger.info("user signed in", fields: ["userID": 42, "plan": "gold", "attempt": 1])
/// ```
extension StructuredLogger {
    /// Logs `message` at `level` with typed `fields`. The message, the error and the fields are not evaluated
    /// when no destination takes `level`.
    @inlinable
    public func log(
        _ level: LogLevel,
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        fields: @autoclosure () -> KeyValuePairs<String, LogValue>,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        guard pipeline.admits(level) else { return }
        pipeline.submitCall(
            level,
            message(),
            error: error(),
            fields: fields(),
            callSite: CallSite(file: file, function: function, line: line)
        )
    }

    /// Logs at ``LogLevel/verbose`` 📣 with typed `fields`.
    @inlinable
    public func verbose(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        fields: @autoclosure () -> KeyValuePairs<String, LogValue>,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.verbose, message(), error: error(), fields: fields(), file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/debug`` 📝 with typed `fields`.
    @inlinable
    public func debug(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        fields: @autoclosure () -> KeyValuePairs<String, LogValue>,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.debug, message(), error: error(), fields: fields(), file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/info`` ℹ️ with typed `fields`.
    @inlinable
    public func info(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        fields: @autoclosure () -> KeyValuePairs<String, LogValue>,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.info, message(), error: error(), fields: fields(), file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/warning`` ⚠️ with typed `fields`.
    @inlinable
    public func warning(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        fields: @autoclosure () -> KeyValuePairs<String, LogValue>,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.warning, message(), error: error(), fields: fields(), file: file, function: function, line: line)
    }

    /// Logs at ``LogLevel/error`` ☠️ with typed `fields`.
    @inlinable
    public func error(
        _ message: @autoclosure () -> String,
        error: @autoclosure () -> (any Error)? = nil,
        fields: @autoclosure () -> KeyValuePairs<String, LogValue>,
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        log(.error, message(), error: error(), fields: fields(), file: file, function: function, line: line)
    }
}
