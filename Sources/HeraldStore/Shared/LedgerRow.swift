import Foundation
import GRDB

/// A column type both stores read: GRDB decodes it straight from the statement, `SQLRow` from its `SQLValue`.
protocol LedgerValue: DatabaseValueConvertible, StatementColumnConvertible, SQLDecodable {}

extension Int64: LedgerValue {}
extension Int: LedgerValue {}
extension Double: LedgerValue {}
extension String: LedgerValue {}
extension Bool: LedgerValue {}
extension Data: LedgerValue {}

/// A result row of either store (GRDB's `Row`, the PostgreSQL `SQLRow`), read by column name or position.
///
/// The shared decoders (`Records`) are generic over it; called with a concrete row they are specialized, so
/// each read is the store's own typed read (GRDB's `StatementColumnConvertible` fast path on SQLite).
protocol LedgerRow {
    func hasColumn(_ name: String) -> Bool
    /// The position of each column name (the first, when a name repeats).
    func columnPositions() -> [String: Int]
    func value<Value: LedgerValue>(named name: String) -> Value
    func value<Value: LedgerValue>(named name: String) -> Value?
    func value<Value: LedgerValue>(at index: Int) -> Value
    func value<Value: LedgerValue>(at index: Int) -> Value?
}

extension Row: LedgerRow {
    func columnPositions() -> [String: Int] {
        var positions: [String: Int] = [:]
        for (index, name) in columnNames.enumerated() where positions[name] == nil { positions[name] = index }
        return positions
    }

    @inline(__always) func value<Value: LedgerValue>(named name: String) -> Value { self[name] }
    @inline(__always) func value<Value: LedgerValue>(named name: String) -> Value? { self[name] }
    @inline(__always) func value<Value: LedgerValue>(at index: Int) -> Value { self[index] }
    @inline(__always) func value<Value: LedgerValue>(at index: Int) -> Value? { self[index] }
}

extension SQLRow: LedgerRow {
    func columnPositions() -> [String: Int] { columns.index }

    @inline(__always) func value<Value: LedgerValue>(named name: String) -> Value { self[name] }
    @inline(__always) func value<Value: LedgerValue>(named name: String) -> Value? { self[name] }
    @inline(__always) func value<Value: LedgerValue>(at index: Int) -> Value { self[index] }
    @inline(__always) func value<Value: LedgerValue>(at index: Int) -> Value? { self[index] }
}

/// A `LedgerRow` read by column name (`row["id"] as Int64`, `row["sent_at"] as Int64?`); with `positions`, a
/// name found there is read by position (the positions found once per statement), others by name.
struct RecordRow<Base: LedgerRow> {
    let base: Base
    let positions: [String: Int]

    init(_ base: Base, positions: [String: Int] = [:]) {
        self.base = base
        self.positions = positions
    }

    func hasColumn(_ name: String) -> Bool { base.hasColumn(name) }

    @_disfavoredOverload
    subscript<Value: LedgerValue>(_ name: String) -> Value {
        if let index = positions[name] { return base.value(at: index) }
        return base.value(named: name)
    }

    subscript<Value: LedgerValue>(_ name: String) -> Value? {
        if let index = positions[name] { return base.value(at: index) }
        return base.value(named: name)
    }
}

extension RecordRow: LedgerRow {
    func columnPositions() -> [String: Int] { base.columnPositions() }
    func value<Value: LedgerValue>(named name: String) -> Value { self[name] }
    func value<Value: LedgerValue>(named name: String) -> Value? { self[name] }
    func value<Value: LedgerValue>(at index: Int) -> Value { base.value(at: index) }
    func value<Value: LedgerValue>(at index: Int) -> Value? { base.value(at: index) }
}

// MARK: - Arguments

/// `SQLValue` is the neutral form of a statement argument: shared code builds arguments as `SQLValue`s, and each
/// store binds them (`StatementArguments` on SQLite, `SQLArguments` on PostgreSQL). A flag is the integer 0/1 on
/// both, as GRDB binds a `Bool`.
extension SQLValue: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .int(let value): value.databaseValue
        case .double(let value): value.databaseValue
        case .text(let value): value.databaseValue
        case .bytes(let value): value.databaseValue
        case .bool(let value): value.databaseValue
        case .ints, .texts: preconditionFailure("SQLite binds no array arguments")
        }
    }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> SQLValue? {
        switch dbValue.storage {
        case .null: .null
        case .int64(let value): .int(value)
        case .double(let value): .double(value)
        case .string(let value): .text(value)
        case .blob(let value): .bytes(value)
        }
    }
}

extension StatementArguments {
    /// Named arguments built by shared code.
    init(_ named: [String: SQLValue]) {
        self.init(named.mapValues { $0 as (any DatabaseValueConvertible)? })
    }
}
