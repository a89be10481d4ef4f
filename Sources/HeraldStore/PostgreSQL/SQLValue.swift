import Foundation

/// A value bound to, or read from, a PostgreSQL statement: the few shapes the ledger stores.
///
/// Flags are stored as integers 0/1 (as in the SQLite ledger), so a `Bool` binds as an integer.
enum SQLValue: Sendable, Hashable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case bytes(Data)
    case bool(Bool)
    case ints([Int64])
    case texts([String])
}

/// A Swift value that binds as a statement argument.
protocol SQLBindable: Sendable {
    var sqlValue: SQLValue { get }
}

extension Int64: SQLBindable { var sqlValue: SQLValue { .int(self) } }
extension Int: SQLBindable { var sqlValue: SQLValue { .int(Int64(self)) } }
extension Int32: SQLBindable { var sqlValue: SQLValue { .int(Int64(self)) } }
extension Double: SQLBindable { var sqlValue: SQLValue { .double(self) } }
extension String: SQLBindable { var sqlValue: SQLValue { .text(self) } }
extension Substring: SQLBindable { var sqlValue: SQLValue { .text(String(self)) } }
extension Bool: SQLBindable { var sqlValue: SQLValue { .int(self ? 1 : 0) } }
extension Data: SQLBindable { var sqlValue: SQLValue { .bytes(self) } }
extension SQLValue: SQLBindable { var sqlValue: SQLValue { self } }
extension Array: SQLBindable where Element: SQLArrayElement {
    var sqlValue: SQLValue { Element.arrayValue(self) }
}
extension Optional: SQLBindable where Wrapped: SQLBindable {
    var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// Elements of an array argument (`id = ANY(?)`).
protocol SQLArrayElement: Sendable {
    static func arrayValue(_ values: [Self]) -> SQLValue
}

extension Int64: SQLArrayElement { static func arrayValue(_ values: [Int64]) -> SQLValue { .ints(values) } }
extension String: SQLArrayElement { static func arrayValue(_ values: [String]) -> SQLValue { .texts(values) } }

/// Statement arguments: positional (`?`, `?NNN`, `$N`) from an array literal, or named (`:name`) from a dictionary literal.
struct SQLArguments: Sendable, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    var positional: [SQLValue] = []
    var named: [String: SQLValue] = [:]

    init() {}

    init(_ values: [SQLValue]) { positional = values }

    /// Named arguments built as neutral values (by code both stores share).
    init(named values: [String: SQLValue]) { named = values }

    init(arrayLiteral elements: (any SQLBindable)?...) {
        positional = elements.map { $0?.sqlValue ?? .null }
    }

    init(dictionaryLiteral elements: (String, (any SQLBindable)?)...) {
        for (name, value) in elements { named[name] = value?.sqlValue ?? .null }
    }

    var isEmpty: Bool { positional.isEmpty && named.isEmpty }

    static func + (lhs: SQLArguments, rhs: SQLArguments) -> SQLArguments {
        var sum = lhs
        sum.positional += rhs.positional
        sum.named.merge(rhs.named) { $1 }
        return sum
    }

    static func += (lhs: inout SQLArguments, rhs: SQLArguments) { lhs = lhs + rhs }

    mutating func append(_ value: (any SQLBindable)?) { positional.append(value?.sqlValue ?? .null) }
}

/// A Swift value read from a column; a mismatch is a programming error, reported with the column's name.
protocol SQLDecodable {
    static func decode(_ value: SQLValue) -> Self?
}

extension Int64: SQLDecodable {
    static func decode(_ value: SQLValue) -> Int64? {
        switch value {
        case .int(let v): v
        case .double(let v): Int64(exactly: v.rounded(.towardZero))
        case .bool(let v): v ? 1 : 0
        case .text(let v): Int64(v) ?? Double(v).flatMap { Int64(exactly: $0.rounded(.towardZero)) }
        default: nil
        }
    }
}

extension Int: SQLDecodable {
    static func decode(_ value: SQLValue) -> Int? { Int64.decode(value).map(Int.init) }
}

extension Double: SQLDecodable {
    static func decode(_ value: SQLValue) -> Double? {
        switch value {
        case .int(let v): Double(v)
        case .double(let v): v
        case .text(let v): Double(v)
        default: nil
        }
    }
}

extension Bool: SQLDecodable {
    static func decode(_ value: SQLValue) -> Bool? {
        switch value {
        case .bool(let v): v
        case .int(let v): v != 0
        default: nil
        }
    }
}

extension String: SQLDecodable {
    static func decode(_ value: SQLValue) -> String? {
        switch value {
        case .text(let v): v
        case .int(let v): String(v)
        case .double(let v): String(v)
        default: nil
        }
    }
}

extension Data: SQLDecodable {
    static func decode(_ value: SQLValue) -> Data? {
        if case .bytes(let v) = value { return v }
        return nil
    }
}

extension SQLValue: SQLDecodable {
    static func decode(_ value: SQLValue) -> SQLValue? { value }
}

/// One result row, read by column name (`row["id"] as Int64`, `row["sent_at"] as Int64?`) or position.
struct SQLRow: Sendable {
    let values: [SQLValue]
    let columns: SQLColumns

    func hasColumn(_ name: String) -> Bool { columns.index[name] != nil }

    var columnNames: [String] { columns.names }

    subscript(_ index: Int) -> SQLValue { values[index] }

    @_disfavoredOverload
    subscript<Value: SQLDecodable>(_ name: String) -> Value {
        guard let value: Value = self[name] else {
            preconditionFailure("column \(name) is NULL or not a \(Value.self): \(self.value(name))")
        }
        return value
    }

    subscript<Value: SQLDecodable>(_ name: String) -> Value? {
        let value = self.value(name)
        if case .null = value { return nil }
        guard let decoded = Value.decode(value) else {
            preconditionFailure("column \(name) is not a \(Value.self): \(value)")
        }
        return decoded
    }

    @_disfavoredOverload
    subscript<Value: SQLDecodable>(_ index: Int) -> Value {
        guard let value = Value.decode(values[index]) else { preconditionFailure("column \(index) is not a \(Value.self): \(values[index])") }
        return value
    }

    subscript<Value: SQLDecodable>(_ index: Int) -> Value? {
        if case .null = values[index] { return nil }
        return Value.decode(values[index])
    }

    func value(_ name: String) -> SQLValue {
        guard let index = columns.index[name] else { preconditionFailure("no column \(name) in \(columns.names)") }
        return values[index]
    }
}

/// The column names of one result, shared by its rows.
final class SQLColumns: Sendable {
    let names: [String]
    let index: [String: Int]

    init(_ names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil { index[name] = position }
        self.index = index
    }
}
