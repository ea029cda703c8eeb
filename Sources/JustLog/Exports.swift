// `import JustLog` is all the documented API needs: levels, `Sensitive`, `PrivacyPolicy`, `LogValue`, destinations
// and the rest of the core, and the Logstash types its configuration names (`LogstashClient.Transport`, …),
// come with it (the README's snippets compile with that one import).
@_exported public import JustLogCore
@_exported public import JustLogLogstash
