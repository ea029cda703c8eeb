#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte order of UTF-8: the order in which ``JSONWriter`` writes keys, the flattened form lists fields and a
/// capture chooses what to keep. `memcmp` on the strings' bytes: the generic `utf8.lexicographicallyPrecedes` costs
/// about ten times as much, and sorting keys is done for every record.
enum UTF8Order {
    static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        let order = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right -> Bool in
                let common = min(left.count, right.count)
                if common > 0, let a = left.baseAddress, let b = right.baseAddress {
                    let difference = memcmp(a, b, common)
                    if difference != 0 { return difference < 0 }
                }
                return left.count < right.count
            }
        }
        return (order ?? nil) ?? lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}
