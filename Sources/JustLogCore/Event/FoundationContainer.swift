import Foundation

/// A Foundation collection — `NSArray`, `NSOrderedSet`, `NSSet`, `NSDictionary` and their mutable kinds — read
/// element by element without bridging it to a Swift collection.
///
/// Bridging (`as [Any]`; on Linux even `NSArray.object(at:)` and `NSDictionary` enumeration) converts every
/// element that is itself a collection, recursively, before anyone can look at it: through a collection that
/// holds itself that never ends, and the program dies of a stack overflow. This type hands out the stored
/// objects as they are, so that ``ValueCapture`` walks them under its own depth limit and cycle check.
///
/// On Linux the stored objects are read through the collection's mirror, which swift-corelibs-foundation
/// builds from its storage; a subclass with storage of its own falls back to the element accessors. On Apple
/// platforms the element accessors return the objects unbridged.
struct FoundationContainer {
    enum Kind {
        case array, orderedSet, set, dictionary
    }

    let object: NSObject
    let kind: Kind
    /// How many elements (or members) it holds.
    let count: Int

    /// `nil` if `object` is not one of the four collections.
    init?(_ object: AnyObject) {
        switch object {
        case let array as NSArray: (self.object, kind, count) = (array, .array, array.count)
        case let dictionary as NSDictionary: (self.object, kind, count) = (dictionary, .dictionary, dictionary.count)
        case let set as NSSet: (self.object, kind, count) = (set, .set, set.count)
        case let orderedSet as NSOrderedSet: (self.object, kind, count) = (orderedSet, .orderedSet, orderedSet.count)
        default: return nil
        }
    }

    /// The first `limit` elements of an array, ordered set or set (a set in no particular order), as stored.
    func elements(limit: Int) -> [Any] {
        let wanted = min(limit, count)
        #if !canImport(ObjectiveC)
        let stored = Mirror(reflecting: object).children
        if stored.count == count { return stored.prefix(wanted).map(\.value) }
        #endif
        switch object {
        case let array as NSArray: return (0..<wanted).map { array.object(at: $0) }
        case let orderedSet as NSOrderedSet: return (0..<wanted).map { orderedSet.object(at: $0) }
        case let set as NSSet: return Array(set.allObjects.prefix(wanted))
        default: return []
        }
    }

    /// Every member of a dictionary, as stored, in no particular order.
    func members() -> [(key: Any, value: Any)] {
        var members: [(key: Any, value: Any)] = []
        members.reserveCapacity(count)
        #if !canImport(ObjectiveC)
        let stored = Mirror(reflecting: object).children
        if stored.count == count {
            for child in stored {
                if let pair = child.value as? (key: NSObject, value: AnyObject) {
                    members.append((pair.key, pair.value))
                } else {
                    let parts = Mirror(reflecting: child.value).children.map(\.value)
                    if parts.count == 2 { members.append((parts[0], parts[1])) }
                }
            }
            return members
        }
        #endif
        guard let dictionary = object as? NSDictionary else { return [] }
        dictionary.enumerateKeysAndObjects { key, value, _ in members.append((key, value)) }
        return members
    }
}
