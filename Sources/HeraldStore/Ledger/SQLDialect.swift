import Foundation

/// The few spellings in which SQLite and PostgreSQL differ, for statements written once (as sql-kit's `SQLDialect`).
///
/// Everything else — placeholders, `RETURNING`, `ON CONFLICT … DO UPDATE`, `NULLS FIRST` — both engines read alike.
enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// Appended to a text column or comparison to order and compare it byte by byte: SQLite's `BINARY` is the
    /// default there, PostgreSQL's databases may collate linguistically.
    var bytewise: String {
        switch self {
        case .sqlite: ""
        case .postgres: #" COLLATE "C""#
        }
    }

    /// The ledger's clock in milliseconds since 1970, for ages judged across hosts: PostgreSQL's own clock, so that
    /// hosts whose clocks disagree (or one whose clock stepped) see the same ages; on SQLite, whose ledger has one
    /// host, the caller's clock (`parameter`, a named placeholder).
    func clock(or parameter: String) -> String {
        switch self {
        case .sqlite: ":\(parameter)"
        case .postgres: "(extract(epoch from clock_timestamp()) * 1000)::bigint"
        }
    }

    /// The smaller of two values, NULL when either is (SQLite's scalar `MIN`; PostgreSQL's `LEAST` would skip the NULL).
    func least(_ a: String, _ b: String) -> String {
        switch self {
        case .sqlite: "MIN(\(a), \(b))"
        case .postgres: "CASE WHEN (\(a)) IS NULL OR (\(b)) IS NULL THEN NULL ELSE LEAST(\(a), \(b)) END"
        }
    }

    /// A placeholder whose type PostgreSQL cannot infer (an `INSERT … SELECT ?`, a `CASE` arm): `?` on SQLite.
    func parameter(_ type: SQLType) -> String {
        switch self {
        case .sqlite: "?"
        case .postgres: "?::\(type.rawValue)"
        }
    }

    /// A named placeholder with its type, as `parameter(_:)`.
    func parameter(_ name: String, _ type: SQLType) -> String {
        switch self {
        case .sqlite: ":\(name)"
        case .postgres: ":\(name)::\(type.rawValue)"
        }
    }

    /// `expression` as text (`CAST(… AS TEXT)`).
    func text(_ expression: String) -> String {
        switch self {
        case .sqlite: "CAST(\(expression) AS TEXT)"
        case .postgres: "(\(expression))::text"
        }
    }

    /// `column IN (…)` over `values`: one placeholder each on SQLite, one array parameter on PostgreSQL.
    func oneOf<Element: SQLArrayElement & SQLBindable>(_ column: String, _ values: [Element]) -> (sql: String, arguments: SQLArguments) {
        switch self {
        case .sqlite:
            let marks = Array(repeating: "?", count: values.count).joined(separator: ",")
            return ("\(column) IN (\(marks))", SQLArguments(values.map(\.sqlValue)))
        case .postgres:
            return ("\(column) = ANY(?)", [values])
        }
    }

    /// An email column equal to a parameter, compared case-insensitively on both (SQLite's columns are
    /// `COLLATE NOCASE`; PostgreSQL's unique indexes are on `lower(email)`).
    func sameAddress(_ column: String, _ parameter: String) -> String {
        switch self {
        case .sqlite: "\(column) = \(parameter)"
        case .postgres: "lower(\(column)) = lower(\(parameter))"
        }
    }

    /// Row locks a read takes in a READ COMMITTED write (`FOR UPDATE`); SQLite's single writer needs none.
    var forUpdate: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE"
        }
    }
}

/// The types `SQLDialect.parameter(_:)` names.
enum SQLType: String, Sendable {
    case bigint
    case text
    case double = "double precision"
}
