import Foundation
import JustLogCore
import Testing

/// One error type with an opaque code, a message and the underlying error as a value (issue #10: the cause was
/// kept as a String, and the Logstash module had its own type with drifting codes).
@Suite struct ErrorTypeTests {
    @Test func aFileSystemErrorCarriesTheUnderlyingErrorItself() throws {
        let url = URL(fileURLWithPath: "/dev/null/not-a-folder/app.log")
        #expect {
            _ = try FileDestination(configuration: .init(url: url))
        } throws: { error in
            guard let error = error as? JustLogError, error.code == .fileSystem, let cause = error.cause else {
                return false
            }
            // A real error value, which the caller can inspect, not its description.
            return (cause as NSError).domain == NSCocoaErrorDomain || cause is POSIXError || cause is CocoaError
        }
    }

    @Test func aTextCauseIsKeptAsADescribedCause() {
        let error = JustLogError(
            code: .spoolUnavailable,
            message: "can't map the segment",
            cause: "No space left on device"
        )
        #expect(error.cause is DescribedCause)
        #expect(error.description == "can't map the segment (No space left on device)")
        #expect(
            error
                == JustLogError(
                    code: .spoolUnavailable,
                    message: "can't map the segment",
                    cause: "No space left on device"
                )
        )
    }
}
