// Hostile values for `JustLogTestChild hostile-value FOLDER KIND`: logs one event carrying the value KIND names
// through `Logger.shared` (file logging into FOLDER/child.log, as main.swift set it up) and returns from main.
//
//   array-self         an NSMutableArray that contains itself
//   dictionary-self    an NSMutableDictionary that contains itself
//   mutual             an NSMutableArray holding an NSMutableDictionary that holds the array (A → B → A)
//   set-cycle          an NSMutableSet holding an NSMutableArray that holds the set (a set can't hold itself:
//                      adding it hashes it while it is being changed)
//   ordered-set-self   an NSMutableOrderedSet that contains itself
//   optional-array     an NSMutableArray that contains itself, wrapped in an Optional
//   hashable-array     an NSMutableArray that contains itself, wrapped in an AnyHashable
//   error-self         an NSError whose userInfo holds an array that holds the error
//   error-loop         two NSErrors, each the other's NSUnderlyingErrorKey, the first also under its own "self"
//   swift-depth        Swift arrays nested 1,000 deep
//   nsarray-depth      NSMutableArrays nested 1,000 deep
import Foundation
import JustLog

/// An NSError whose user info can be changed after it was made, so that it can point back at itself.
final class LoopingError: NSError, @unchecked Sendable {
    var loopingUserInfo: [String: Any] = [:]
    override var userInfo: [String: Any] { loopingUserInfo }
}

func logHostileValue(_ arguments: [String]) {
    let kind = arguments[3]
    let logger = Logger.shared
    logger.setup()
    var value: Any?
    var error: (any Error)?
    switch kind {
    case "array-self":
        let array = NSMutableArray(array: ["first"])
        array.add(array)
        value = array
    case "optional-array", "hashable-array":
        let array = NSMutableArray(array: ["first"])
        array.add(array)
        value = kind == "optional-array" ? Optional(array) as Any : AnyHashable(array)
    case "dictionary-self":
        let dictionary = NSMutableDictionary(dictionary: ["name": "outer"])
        dictionary["self"] = dictionary
        value = dictionary
    case "mutual":
        let array = NSMutableArray()
        let dictionary = NSMutableDictionary()
        array.add(dictionary)
        dictionary["back"] = array
        value = array
    case "set-cycle":
        let set = NSMutableSet()
        let array = NSMutableArray()
        set.add(array)
        array.add(set)
        value = set
    case "ordered-set-self":
        let set = NSMutableOrderedSet(array: ["first"])
        set.add(set)
        value = set
    case "error-self":
        let list = NSMutableArray()
        let nsError = NSError(domain: "hostile", code: 7, userInfo: ["list": list])
        list.add(nsError)
        error = nsError
    case "error-loop":
        let first = LoopingError(domain: "first", code: 1)
        let second = LoopingError(domain: "second", code: 2)
        first.loopingUserInfo = [NSUnderlyingErrorKey: second, "self": first]
        second.loopingUserInfo = [NSUnderlyingErrorKey: first]
        error = first
    case "swift-depth":
        var nested: Any = "bottom"
        for _ in 0..<1000 { nested = [nested] }
        value = nested
    case "nsarray-depth":
        var nested: AnyObject = "bottom" as NSString
        for _ in 0..<1000 { nested = NSMutableArray(object: nested) }
        value = nested
    default:
        FileHandle.standardError.write(Data("unknown hostile value \(kind)\n".utf8))
        exit(2)
    }
    logger.error("hostile \(kind)", error: error, userInfo: value.map { ["value": $0] })
    FileHandle.standardOutput.write(Data("logged\n".utf8))
}
