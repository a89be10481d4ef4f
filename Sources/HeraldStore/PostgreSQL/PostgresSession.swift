import Foundation
import HeraldCore
import Logging
import NIOCore
import PostgresNIO

/// An error the PostgreSQL server answered a statement with, with its SQLSTATE.
struct PostgresFailure: Error, CustomStringConvertible, Sendable {
    let sqlState: String
    let message: String
    let detail: String?
    let constraint: String?

    /// 23505: a UNIQUE or PRIMARY KEY constraint refused the row.
    var isUniqueViolation: Bool { sqlState == "23505" }
    /// 40001 or 40P01: the transaction lost a race with another and may simply run again.
    var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }

    var description: String { "\(message) (SQLSTATE \(sqlState))" + (detail.map { ": \($0)" } ?? "") }

    /// SQLSTATE classes of conditions that pass by themselves: a lost connection (08), too little disk, memory or
    /// connections (53), the server shutting down or starting (57P01–57P03), a lock wait that timed out (55P03).
    var isPassing: Bool {
        sqlState.hasPrefix("08") || sqlState.hasPrefix("53") || ["57P01", "57P02", "57P03", "55P03", "57014"].contains(sqlState)
    }
}

/// The connection was closed before a statement could be handed to it.
struct ConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection to PostgreSQL is closed" }
}

/// One connection lent by `PostgresPool`: runs statements and blocks its thread until each has answered.
///
/// Statements take `?` (in order), `?NNN` or `$NNN` (by position) and `:name` (named) placeholders, so the
/// ledger's statements read as they do on SQLite; string literals and `::type` casts are left alone.
final class PostgresSession {
    let connection: PostgresConnection
    let logger: Logger
    /// Set when the connection failed: the pool drops it instead of lending it again.
    var isBroken = false
    /// Lent from the pool's idle connections (rather than opened for this caller): a failure of its first
    /// statement may only mean the server closed it meanwhile.
    var wasIdle = false
    /// The connection was given up for want of an answer (rather than closed by the server).
    var timedOut = false
    /// How long a statement's answer is awaited before the connection is given up (`PostgresTimeouts.answer`).
    var answerTimeout: TimeInterval

    init(connection: PostgresConnection, logger: Logger, answerTimeout: TimeInterval) {
        self.connection = connection
        self.logger = logger
        self.answerTimeout = answerTimeout
    }

    /// Waits at most `seconds` for `future`; nil if it has not completed by then.
    static func wait<Value: Sendable>(for future: EventLoopFuture<Value>, seconds: TimeInterval) throws -> Value? {
        let outcome = Outcome<Value>()
        future.whenComplete { outcome.set($0) }
        guard outcome.done.wait(timeout: .now() + .milliseconds(Int(seconds * 1000))) == .success else { return nil }
        return try outcome.result?.get()
    }

    /// A future's result, handed from its event loop to the waiting thread. `@unchecked Sendable`: `lock` guards it.
    private final class Outcome<Value: Sendable>: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var stored: Result<Value, any Error>?

        func set(_ result: Result<Value, any Error>) {
            lock.withLock { stored = result }
            done.signal()
        }

        var result: Result<Value, any Error>? { lock.withLock { stored } }
    }

    /// Runs one statement; returns how many rows it changed (or returned).
    @discardableResult
    func execute(_ sql: String, _ arguments: SQLArguments = []) throws -> Int {
        try run(sql, arguments).metadata.rows ?? 0
    }

    func fetchAll(_ sql: String, _ arguments: SQLArguments = []) throws -> [SQLRow] {
        let result = try run(sql, arguments)
        guard let first = result.rows.first else { return [] }
        let columns = SQLColumns(first.map(\.columnName))
        return try result.rows.map { row in SQLRow(values: try row.map(Self.value), columns: columns) }
    }

    func fetchOne(_ sql: String, _ arguments: SQLArguments = []) throws -> SQLRow? {
        try fetchAll(sql, arguments).first
    }

    /// The first column of the first row, or nil when there is no row or it is NULL.
    func fetchValue<Value: SQLDecodable>(_ sql: String, _ arguments: SQLArguments = [], as type: Value.Type = Value.self) throws
        -> Value?
    {
        guard let row = try fetchOne(sql, arguments) else { return nil }
        return row[0]
    }

    /// The first column of every row (NULLs skipped).
    func fetchColumn<Value: SQLDecodable>(_ sql: String, _ arguments: SQLArguments = [], as type: Value.Type = Value.self) throws
        -> [Value]
    {
        try fetchAll(sql, arguments).compactMap { $0[0] as Value? }
    }

    /// Runs `body` in a savepoint: if it throws, only its own changes are undone and the error passes on.
    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        try execute("SAVEPOINT herald_step")
        do {
            let value = try body()
            try execute("RELEASE SAVEPOINT herald_step")
            return value
        } catch {
            if !isBroken { _ = try? execute("ROLLBACK TO SAVEPOINT herald_step") }
            throw error
        }
    }

    private func run(_ sql: String, _ arguments: SQLArguments) throws -> PostgresQueryResult {
        let (text, values) = try PostgresSQL.rewrite(sql, arguments)
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .null: bindings.appendNull()
            case .int(let v): bindings.append(v)
            case .double(let v): bindings.append(v)
            case .text(let v): bindings.append(v)
            case .bytes(let v): bindings.append(ByteBuffer(bytes: v))
            case .bool(let v): bindings.append(v)
            case .ints(let v): bindings.append(v)
            case .texts(let v): bindings.append(v)
            }
        }
        do {
            let query = PostgresQuery(unsafeSQL: text, binds: bindings)
            let (connection, logger) = (self.connection, self.logger)
            // Handed over on the connection's own event loop, and only while it is open: postgres-nio writes a
            // statement into the channel without a promise, so one written just after the server closed the
            // connection (a restart, a terminated backend) was dropped unanswered and its caller waited for ever.
            let answer = connection.eventLoop.flatSubmit { () -> EventLoopFuture<PostgresQueryResult> in
                guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(ConnectionClosed()) }
                return connection.query(query, logger: logger)
            }
            guard let result = try Self.wait(for: answer, seconds: answerTimeout) else {
                // The server said nothing for longer than it may run a statement: it is frozen or gone without a
                // reset. Closing the connection fails the query; the pool opens a new one for the next caller.
                (isBroken, timedOut) = (true, true)
                PostgresPool.close(connection)
                throw HeraldError(.unavailable, "ledger unavailable: PostgreSQL did not answer in \(Int(answerTimeout)) s")
            }
            return result
        } catch let error as PSQLError {
            throw translate(error)
        } catch let error as HeraldError {
            throw error
        } catch {
            isBroken = true
            throw HeraldError(.unavailable, "ledger unavailable: \(error)")
        }
    }

    func translate(_ error: PSQLError) -> any Error {
        guard error.code == .server, let info = error.serverInfo else {
            isBroken = true
            return HeraldError(.unavailable, "ledger unavailable: \(error.code)")
        }
        let failure = PostgresFailure(
            sqlState: info[.sqlState] ?? "XX000", message: info[.message] ?? "\(error)", detail: info[.detail],
            constraint: info[.constraintName])
        if failure.isPassing {
            if failure.sqlState.hasPrefix("08") || failure.sqlState.hasPrefix("57P") { isBroken = true }
            return HeraldError(.unavailable, "ledger unavailable: \(failure)")
        }
        return failure
    }

    static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .bool: return .bool(try cell.decode(Bool.self))
        case .int2: return .int(Int64(try cell.decode(Int16.self)))
        case .int4: return .int(Int64(try cell.decode(Int32.self)))
        case .int8: return .int(try cell.decode(Int64.self))
        case .float4: return .double(Double(try cell.decode(Float.self)))
        case .float8: return .double(try cell.decode(Double.self))
        case .numeric:
            let decimal = try cell.decode(Decimal.self)
            let double = NSDecimalNumber(decimal: decimal).doubleValue
            if let integer = Int64(exactly: double) { return .int(integer) }
            return .double(double)
        case .bytea: return .bytes(Data(buffer: try cell.decode(ByteBuffer.self)))
        case .int8Array: return .ints(try cell.decode([Int64].self))
        case .textArray, .varcharArray: return .texts(try cell.decode([String].self))
        default: return .text(try cell.decode(String.self))
        }
    }
}

/// Rewrites the ledger's placeholders into PostgreSQL's `$N`.
enum PostgresSQL {
    static func rewrite(_ sql: String, _ arguments: SQLArguments) throws -> (String, [SQLValue]) {
        if arguments.isEmpty && !sql.contains("?") && !sql.contains(":") { return (sql, []) }
        var output = ""
        output.reserveCapacity(sql.utf8.count + 16)
        var values: [SQLValue] = []
        var namedIndex: [String: Int] = [:]
        var nextPositional = 0
        let characters = Array(sql.unicodeScalars)
        var i = 0
        func isIdentifier(_ c: Unicode.Scalar) -> Bool { c == "_" || CharacterSet.alphanumerics.contains(c) }
        func positional(_ index: Int) throws -> Int {
            guard index < arguments.positional.count else {
                throw PostgresFailure(
                    sqlState: "07001", message: "statement needs argument \(index + 1), has \(arguments.positional.count): \(sql)",
                    detail: nil, constraint: nil)
            }
            // Positional arguments map to $1…$n as given, so `?2` and `$2` reuse the same parameter.
            while values.count <= index { values.append(arguments.positional[values.count]) }
            return index + 1
        }
        var usesPositional = false
        while i < characters.count {
            let c = characters[i]
            if c == "'" || c == "\"" {
                // A quoted literal or identifier, copied as it is ('' and "" escape themselves).
                output.unicodeScalars.append(c)
                i += 1
                while i < characters.count {
                    output.unicodeScalars.append(characters[i])
                    if characters[i] == c { break }
                    i += 1
                }
                i += 1
                continue
            }
            if c == "-", i + 1 < characters.count, characters[i + 1] == "-" {
                while i < characters.count, characters[i] != "\n" { i += 1 }
                continue
            }
            if c == "?" || c == "$" {
                var j = i + 1
                var digits = ""
                while j < characters.count, ("0"..."9").contains(characters[j]) {
                    digits.unicodeScalars.append(characters[j])
                    j += 1
                }
                if c == "?" || !digits.isEmpty {
                    usesPositional = true
                    let index: Int
                    if let number = Int(digits) {
                        index = number - 1
                    } else {
                        index = nextPositional
                        nextPositional += 1
                    }
                    output += "$\(try positional(index))"
                    i = j
                    continue
                }
            }
            if c == ":", i + 1 < characters.count, characters[i + 1] != ":", i == 0 || characters[i - 1] != ":",
                isIdentifier(characters[i + 1]), !("0"..."9").contains(characters[i + 1])
            {
                var j = i + 1
                var name = ""
                while j < characters.count, isIdentifier(characters[j]) {
                    name.unicodeScalars.append(characters[j])
                    j += 1
                }
                guard let value = arguments.named[name] else {
                    throw PostgresFailure(
                        sqlState: "07001", message: "statement names :\(name), which its arguments lack: \(sql)", detail: nil, constraint: nil)
                }
                if usesPositional {
                    throw PostgresFailure(
                        sqlState: "07001", message: "statement mixes positional and named arguments: \(sql)", detail: nil, constraint: nil)
                }
                let number: Int
                if let known = namedIndex[name] {
                    number = known
                } else {
                    values.append(value)
                    number = values.count
                    namedIndex[name] = number
                }
                output += "$\(number)"
                i = j
                continue
            }
            output.unicodeScalars.append(c)
            i += 1
        }
        return (output, values)
    }
}

extension PostgresSession: LedgerSession {
    var dialect: SQLDialect { .postgres }

    func withSavepoint<T>(_ body: () throws -> T) throws -> T { try inSavepoint(body) }

    func executeCached(_ sql: String, _ arguments: SQLArguments) throws -> Int { try execute(sql, arguments) }

    func fetchAllCached(_ sql: String, _ arguments: SQLArguments) throws -> [SQLRow] { try fetchAll(sql, arguments) }

    func fetchOneCached(_ sql: String, _ arguments: SQLArguments) throws -> SQLRow? { try fetchOne(sql, arguments) }

    func keyChecked<T>(constraint: String?, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as PostgresFailure where failure.isUniqueViolation && (constraint == nil || failure.constraint == constraint) {
            throw PostgresFailure(
                sqlState: "40001", message: "a concurrent transaction took the key: \(failure.message)", detail: failure.detail,
                constraint: failure.constraint)
        }
    }
}
