// The Logstash destination is a `LogDestination` of the core and throws its one error type (`LogstashError` is
// `JustLogError`): `import JustLogLogstash` brings the core with it.
@_exported public import JustLogCore
