// The project's own tests use the public test kit (CapturingDestination, LineCapture, ManualClock) as users do.
@_exported import JustLogTestKit
