import Foundation

/// An error and the errors underneath it, as the aggregated form reports them.
///
/// Works the same for `NSError` and for Swift errors on Linux:
/// - domain: `NSError.domain`, `CustomNSError.errorDomain`, or the Swift type's qualified name;
/// - code: `NSError.code`, `CustomNSError.errorCode`, or the bridged Swift code;
/// - `NSLocalizedDescription`: the user-info / `LocalizedError` description, or, for a plain Swift error,
///   `String(describing:)` of it (more useful than "The operation could not be completed");
/// - `NSLocalizedFailureReason`, `NSLocalizedRecoverySuggestion`: where present;
/// - the underlying error: `NSUnderlyingErrorKey` in the user info, or else the first stored property
///   of a Swift error that is itself an `Error` (such as `underlyingError`), followed to a depth of 16 and
///   never to an error already in the chain;
/// - the remaining user info: captured like a call's `userInfo` (see ``ValueCapture``), all links together
///   within one set of ``CaptureLimits``; an error found inside its own user info becomes `"<cycle: NSError>"`.
///   What was cut is in ``truncations``.
///
/// ```swift
/// let chain = ErrorChain(error)
/// chain.links.first?.domain   // "com.just-eat.test"
/// ```
public struct ErrorChain: Sendable {
    /// One error of the chain.
    public struct Link: Sendable {
        public var domain: String
        public var code: Int
        public var type: String
        public var localizedDescription: String
        public var failureReason: String?
        public var recoverySuggestion: String?
        /// The remaining user-info entries, captured as values.
        public var otherUserInfo: [String: LogValue]
    }

    /// The error first, then each underlying error in turn.
    public var links: [Link]
    /// What capturing the user infos cut, one line per cut (`errors[0].user_info: kept 1000 of 5000 keys (limit
    /// 1000)`); empty when everything fitted.
    public var truncations: [String]

    static let maximumDepth = 16

    /// A chain read back from the journal.
    init(links: [Link], truncations: [String]) {
        self.links = links
        self.truncations = truncations
    }

    public init(_ error: any Error, limits: CaptureLimits = CaptureLimits()) {
        var links: [Link] = []
        var next: (any Error)? = error
        var seenObjects = Set<ObjectIdentifier>()
        var capture = ValueCapture(limits: limits)
        while let current = next, links.count < Self.maximumDepth {
            if type(of: current) is AnyClass {
                let identity = ObjectIdentifier(current as AnyObject)
                if !seenObjects.insert(identity).inserted { break }
            }
            let (link, underlying) = Self.describe(current, index: links.count, capture: &capture)
            links.append(link)
            next = underlying
        }
        self.links = links
        self.truncations = capture.truncations
    }

    private static func describe(_ error: any Error, index: Int, capture: inout ValueCapture) -> (Link, (any Error)?) {
        let bridged = error as NSError
        var userInfo = bridged.userInfo
        let isNSError = type(of: error) is NSError.Type || error is any CustomNSError
        let description: String
        if let text = userInfo[NSLocalizedDescriptionKey] as? String {
            description = text
        } else if let localized = (error as? any LocalizedError)?.errorDescription {
            description = localized
        } else if isNSError {
            description = bridged.localizedDescription
        } else {
            description = String(describing: error)
        }
        let reason =
            userInfo[NSLocalizedFailureReasonErrorKey] as? String
            ?? (error as? any LocalizedError)?.failureReason
        let suggestion =
            userInfo[NSLocalizedRecoverySuggestionErrorKey] as? String
            ?? (error as? any LocalizedError)?.recoverySuggestion
        var underlying = userInfo[NSUnderlyingErrorKey] as? any Error
        // Each is taken out of the user info only when it was read as what it names (a string, an error): a value of
        // another type stays there (it was dropped, said nowhere: review, helper-63).
        for key in [NSLocalizedDescriptionKey, NSLocalizedFailureReasonErrorKey, NSLocalizedRecoverySuggestionErrorKey]
        where userInfo[key] is String {
            userInfo[key] = nil
        }
        if userInfo[NSUnderlyingErrorKey] is any Error { userInfo[NSUnderlyingErrorKey] = nil }
        if underlying == nil, !(type(of: error) is NSError.Type) {
            // A stored property that is itself an error is the cause — unless it is this error's own bridged
            // form (URLError and CocoaError keep their NSError in `_nsError`): same domain and code.
            underlying = Mirror(reflecting: error).children.lazy
                .compactMap { $0.value as? any Error }
                .first { candidate in
                    let other = candidate as NSError
                    return !(other.domain == bridged.domain && other.code == bridged.code)
                }
        }
        let link = Link(
            domain: bridged.domain,
            code: bridged.code,
            type: String(reflecting: type(of: error)),
            localizedDescription: description,
            failureReason: reason,
            recoverySuggestion: suggestion,
            otherUserInfo: userInfo.isEmpty
                ? [:]
                : capture.fields(
                    userInfo,
                    of: type(of: error) is AnyClass ? error as AnyObject : nil,
                    at: "\(UserInfoKey.errors)[\(index)].user_info"
                )
        )
        return (link, underlying)
    }

    /// The fields of the first error, as top-level `userInfo` keys.
    public var topLevelFields: [(String, LogValue)] {
        guard let first = links.first else { return [] }
        var fields: [(String, LogValue)] = [
            (UserInfoKey.errorDomain, .string(first.domain)),
            (UserInfoKey.errorCode, .int(Int64(first.code))),
            (UserInfoKey.localizedDescription, .string(first.localizedDescription)),
        ]
        if let reason = first.failureReason { fields.append((UserInfoKey.localizedFailureReason, .string(reason))) }
        if let suggestion = first.recoverySuggestion {
            fields.append((UserInfoKey.localizedRecoverySuggestion, .string(suggestion)))
        }
        return fields
    }

    /// The whole chain, as the `errors` array of objects.
    public var errorsValue: LogValue {
        .array(
            links.map { link in
                var object: [String: LogValue] = [
                    UserInfoKey.errorDomain: .string(link.domain),
                    UserInfoKey.errorCode: .int(Int64(link.code)),
                    "error_type": .string(link.type),
                    UserInfoKey.localizedDescription: .string(link.localizedDescription),
                ]
                if let reason = link.failureReason { object[UserInfoKey.localizedFailureReason] = .string(reason) }
                if let suggestion = link.recoverySuggestion {
                    object[UserInfoKey.localizedRecoverySuggestion] = .string(suggestion)
                }
                if !link.otherUserInfo.isEmpty { object["user_info"] = .object(link.otherUserInfo) }
                return .object(object)
            }
        )
    }
}
