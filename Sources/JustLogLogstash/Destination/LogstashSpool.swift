public import JustLogCore

/// The Logstash destination's on-disk queue of flattened lines: a `Spool` (the same crash-safe segment store
/// that holds the log journal), read, sent and acknowledged by the ``LogstashClient``.
public typealias LogstashSpool = Spool
