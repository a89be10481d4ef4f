import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// Where a PostgreSQL ledger lives: `postgres://user@host:port/database?schema=name&sslmode=verify-full&sslrootcert=ca.pem`.
///
/// The password comes from the environment (`HERALD_DATABASE_PASSWORD`, else `PGPASSWORD`), never from a
/// configuration file; a password written in the URL is refused so that it cannot end up in one.
///
/// `sslmode` and `sslrootcert` follow libpq: `prefer` (the default) encrypts when the server offers TLS, `require`
/// insists on it, `verify-ca` also checks the server's certificate against `sslrootcert`, `verify-full` checks its
/// name too (the host's name, or for an address the certificate's IP entries); `require` with `sslrootcert`
/// checks the certificate like `verify-ca`. Unlike libpq: without `sslrootcert` the system's trust roots are used
/// (not `~/.postgresql/root.crt`), `sslrootcert` beside `disable` or `prefer` is refused rather than ignored, and
/// `prefer` does not retry in plain text after a failed handshake.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    /// The schema the ledger's tables live in (`search_path`); nil is the server's default (`public`).
    public var schema: String?
    /// Whether and how the connection is encrypted (libpq's `sslmode`).
    public var tls: TLSMode
    /// The certificate authorities the server's certificate must chain to (libpq's `sslrootcert`, a PEM file).
    public var rootCertificate: String?

    /// libpq's `sslmode` values, except `allow` (plain first, TLS only if refused), which Herald does not offer.
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        case disable
        case prefer
        case require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    public init(
        host: String, port: Int = 5432, user: String, password: String? = nil, database: String, schema: String? = nil,
        tls: TLSMode = .prefer, rootCertificate: String? = nil
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.schema = schema
        self.tls = tls
        self.rootCertificate = rootCertificate
    }

    /// Whether `text` names a PostgreSQL ledger rather than a SQLite file.
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// - Throws: `INVALID_CONFIGURATION` naming what is wrong with `url`.
    public init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        func invalid(_ problem: String) -> HeraldError {
            HeraldError(.invalidConfiguration, "database.url: \(problem) (expected postgres://user@host:port/database)")
        }
        guard Self.isURL(url), let components = URLComponents(string: url) else { throw invalid("not a postgres:// URL") }
        guard let host = components.host, !host.isEmpty else { throw invalid("no host") }
        guard let user = components.user, !user.isEmpty else { throw invalid("no user") }
        guard components.password == nil else {
            throw invalid("a password in the URL; set HERALD_DATABASE_PASSWORD in the environment instead")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else { throw invalid("no database name") }
        var schema: String?
        var tls = TLSMode.prefer
        var rootCertificate: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "schema":
                guard let value = item.value, !value.isEmpty,
                    value.unicodeScalars.allSatisfy({ $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) })
                else { throw invalid("schema must be lower-case letters, digits and _") }
                schema = value
            case "sslmode":
                guard let value = item.value, let mode = TLSMode(rawValue: value) else {
                    let modes = TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw invalid("sslmode \(item.value.map { "'\($0)'" } ?? "without a value") is not one of \(modes)")
                }
                tls = mode
            case "sslrootcert":
                guard let value = item.value, !value.isEmpty else { throw invalid("sslrootcert names no file") }
                rootCertificate = value
            default: throw invalid("unknown parameter \(item.name)")
            }
        }
        if rootCertificate != nil, tls == .disable || tls == .prefer {
            throw invalid("sslrootcert needs sslmode=require, verify-ca or verify-full (with \(tls.rawValue) nothing checks it)")
        }
        self.init(
            host: host, port: components.port ?? 5432, user: user,
            password: environment["HERALD_DATABASE_PASSWORD"] ?? environment["PGPASSWORD"], database: database, schema: schema,
            tls: tls, rootCertificate: rootCertificate)
    }

    /// The URL without the password.
    public var description: String {
        var parameters = schema.map { ["schema=\($0)"] } ?? []
        if tls != .prefer { parameters.append("sslmode=\(tls.rawValue)") }
        if let rootCertificate { parameters.append("sslrootcert=\(rootCertificate)") }
        return "postgres://\(user)@\(host):\(port)/\(database)" + (parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&"))
    }

    /// The connection's TLS setting, its context built once (`sslrootcert` read then).
    /// - Throws: `INVALID_CONFIGURATION` when `sslrootcert` cannot be read as PEM certificates.
    func connectionTLS() throws -> PostgresConnection.Configuration.TLS {
        guard tls != .disable else { return .disable }
        var configuration = TLSConfiguration.makeClientConfiguration()
        let checksChain = tls == .verifyCA || tls == .verifyFull || rootCertificate != nil
        configuration.certificateVerification =
            tls == .verifyFull ? .fullVerification : checksChain ? .noHostnameVerification : .none
        do {
            if let rootCertificate {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(rootCertificate))
            }
            let context = try NIOSSLContext(configuration: configuration)
            return tls == .prefer ? .prefer(context) : .require(context)
        } catch {
            throw HeraldError(.invalidConfiguration, "database.url: sslrootcert \(rootCertificate ?? ""): \(error)")
        }
    }
}

/// How long PostgreSQL may keep a caller waiting (`database.busyTimeout`, `database.statementTimeout`).
public struct PostgresTimeouts: Sendable, Hashable {
    /// The longest wait for a lock (`lock_timeout`): then SQLSTATE 55P03, a passing `UNAVAILABLE`.
    public var lock: TimeInterval
    /// The longest one statement may run (`statement_timeout`): then SQLSTATE 57014, a passing `UNAVAILABLE`.
    public var statement: TimeInterval
    /// A transaction left open this long by a client that stopped (a paused or frozen process) is ended by the
    /// server, so the locks it holds do not stop everyone else (`idle_in_transaction_session_timeout`).
    public var idleInTransaction: TimeInterval { max(60, statement * 2) }
    /// How long Herald waits for any answer: the server's own deadline plus a margin for the network. A
    /// connection that stays silent longer (a server frozen, a peer gone without a reset) is closed.
    public var answer: TimeInterval { statement + 5 }

    public init(lock: TimeInterval = 10, statement: TimeInterval = 30) {
        self.lock = lock
        self.statement = statement
    }

    /// Milliseconds, as PostgreSQL's settings take them.
    static func milliseconds(_ seconds: TimeInterval) -> String { String(Int((seconds * 1000).rounded())) }
}

/// A fixed number of PostgreSQL connections lent to one thread at a time; callers block, as with SQLite.
///
/// Every wait is bounded: the server ends lock waits and statements past `PostgresTimeouts` itself, and a
/// connection that does not answer within `PostgresTimeouts.answer` (or a connection attempt within the same) is
/// closed and reported `UNAVAILABLE`. A broken connection is never lent again; a transaction whose first
/// statement fails on a connection that sat idle (the server restarted meanwhile, or ended it) runs again at once
/// on a new connection, since nothing of it ran.
///
/// Writes run as SERIALIZABLE transactions, the nearest PostgreSQL comes to SQLite's one writer at a time, so
/// a check and the insert it guards (a throttle, a single-use code) cannot interleave with another node's; a
/// transaction that loses such a race (SQLSTATE 40001, 40P01) runs again, up to `retries` times.
final class PostgresPool: @unchecked Sendable {
    enum Isolation: String {
        case serializable = "SERIALIZABLE"
        /// For claims that skip locked rows (`FOR UPDATE SKIP LOCKED`): no serialization failures between workers.
        case readCommitted = "READ COMMITTED"
        case repeatableReadOnly = "REPEATABLE READ READ ONLY"
    }

    let location: PostgresLocation
    let logger: Logger
    let timeouts: PostgresTimeouts
    private let size: Int
    private let condition = MonotonicCondition()
    private var idle: [PostgresSession] = []
    private var open = 0
    private var nextID = 0
    static let retries = 20

    /// The TLS setting every connection uses (its context holds the trust roots, read once).
    private let tls: PostgresConnection.Configuration.TLS

    /// - Throws: `INVALID_CONFIGURATION` when the location's `sslrootcert` cannot be read.
    init(location: PostgresLocation, size: Int = 8, timeouts: PostgresTimeouts = PostgresTimeouts()) throws {
        self.location = location
        self.timeouts = timeouts
        tls = try location.connectionTLS()
        self.size = max(1, size)
        var logger = Logger(label: "herald.postgres")
        logger.logLevel = .error
        self.logger = logger
    }

    deinit {
        for session in idle { Self.close(session.connection) }
    }

    /// Lends a connection to `body`; a connection that broke is closed instead of returned.
    func withSession<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        let session = try acquire()
        defer { release(session) }
        return try body(session)
    }

    @discardableResult
    func write<T>(_ isolation: Isolation = .serializable, _ body: (PostgresSession) throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try transaction(isolation, body)
            } catch let failure as PostgresFailure where failure.isRetryable {
                attempt += 1
                guard attempt < Self.retries else {
                    throw HeraldError(.unavailable, "ledger busy: \(failure.message) (gave up after \(attempt) tries)")
                }
                Thread.sleep(forTimeInterval: Double.random(in: 0.001...0.004) * Double(min(attempt, 10)))
            }
        }
    }

    @discardableResult
    func read<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        try transaction(.repeatableReadOnly, body)
    }

    private func transaction<T>(_ isolation: Isolation, _ body: (PostgresSession) throws -> T) throws -> T {
        var stale = 0
        while true {
            let session = try acquire()
            defer { release(session) }
            do {
                try session.execute("BEGIN ISOLATION LEVEL \(isolation.rawValue)")
            } catch let error as HeraldError where session.isBroken && !session.timedOut && session.wasIdle && stale < size {
                // The connection died while it sat in the pool (a restart, a terminated backend): nothing ran.
                stale += 1
                logger.debug("dropped a pooled connection the server had closed", metadata: ["error": "\(error.detail)"])
                continue
            }
            do {
                let value = try body(session)
                try session.execute("COMMIT")
                return value
            } catch {
                if !session.isBroken { _ = try? session.execute("ROLLBACK") }
                throw error
            }
        }
    }

    private func acquire() throws -> PostgresSession {
        condition.lock()
        while true {
            if let session = idle.popLast() {
                condition.unlock()
                if session.connection.isClosed {
                    condition.lock()
                    open -= 1
                    continue
                }
                session.wasIdle = true
                return session
            }
            if open < size {
                open += 1
                nextID += 1
                let id = nextID
                condition.unlock()
                do {
                    return try connect(id: id)
                } catch {
                    condition.lock()
                    open -= 1
                    condition.signal()
                    condition.unlock()
                    throw error
                }
            }
            // Every connection is lent: one comes back within a statement's deadline, or the ledger is unavailable.
            if !condition.wait(seconds: timeouts.answer) && idle.isEmpty && open >= size {
                condition.unlock()
                throw HeraldError(.unavailable, "ledger unavailable: all \(size) connections stayed busy for \(Int(timeouts.answer)) s")
            }
        }
    }

    private func release(_ session: PostgresSession) {
        condition.lock()
        if session.isBroken || session.connection.isClosed {
            open -= 1
            Self.close(session.connection)
        } else {
            idle.append(session)
        }
        condition.signal()
        condition.unlock()
    }

    /// Closes `connection` without waiting, keeping it alive until it is closed (postgres-nio requires a
    /// connection be closed before it is released).
    static func close(_ connection: PostgresConnection) {
        let closed: EventLoopFuture<Void> = connection.close()
        closed.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// The connection settings every connection of this pool uses.
    var configuration: PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: tls)
        configuration.options.connectTimeout = .seconds(10)
        // Every session's own deadlines, set at start-up so that no statement runs before them.
        var parameters = [
            ("lock_timeout", PostgresTimeouts.milliseconds(timeouts.lock)),
            ("statement_timeout", PostgresTimeouts.milliseconds(timeouts.statement)),
            ("idle_in_transaction_session_timeout", PostgresTimeouts.milliseconds(timeouts.idleInTransaction)),
        ]
        if let schema = location.schema { parameters.append(("search_path", schema)) }
        configuration.options.additionalStartupParameters = parameters
        return configuration
    }

    /// Whether a TLS failure is the server's certificate refused by the checks `sslmode` asks for: its chain
    /// (`CERTIFICATE_VERIFY_FAILED`) or its name.
    static func isCertificateRefusal(_ error: any Error) -> Bool {
        if let extra = error as? NIOSSLExtraError {
            return extra == .failedToValidateHostname || extra == .serverHostnameImpossibleToMatch
        }
        if let ssl = error as? NIOSSLError, case .handshakeFailed = ssl {
            return "\(ssl)".contains("CERTIFICATE_VERIFY_FAILED")
        }
        return false
    }

    /// Opens one connection.
    /// - Throws: `UNAVAILABLE` while the server cannot be reached; `INVALID_CONFIGURATION` when it refuses the
    ///   user, the password or the database.
    func connect(id: Int) throws -> PostgresSession {
        let configuration = self.configuration
        do {
            let connecting = PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: id, logger: logger)
            guard let connection = try PostgresSession.wait(for: connecting, seconds: timeouts.answer) else {
                // A server that accepts the connection and then says nothing (frozen, or a peer gone silent).
                connecting.whenSuccess { Self.close($0) }
                throw HeraldError(.unavailable, "ledger unavailable: \(location): no answer in \(Int(timeouts.answer)) s")
            }
            return PostgresSession(connection: connection, logger: logger, answerTimeout: timeouts.answer)
        } catch let error as PSQLError {
            if error.code == .server, let info = error.serverInfo, let state = info[.sqlState] {
                let message = info[.message] ?? "\(error)"
                // 28: authentication; 3D000: no such database; 42501: no permission.
                if state.hasPrefix("28") || state == "3D000" || state == "42501" {
                    throw HeraldError(.invalidConfiguration, "database \(location): \(message)")
                }
                throw HeraldError(.unavailable, "ledger unavailable: \(location): \(message)")
            }
            if error.code == .sslUnsupported {
                throw HeraldError(
                    .invalidConfiguration, "database \(location): the server does not offer TLS, and sslmode=\(location.tls.rawValue) requires it")
            }
            if let underlying = error.underlying, Self.isCertificateRefusal(underlying) {
                // The server's certificate (its chain or its name) was refused: retrying will not change it. Any
                // other TLS failure (a connection cut mid-handshake by a restart or a failover) is transient.
                throw HeraldError(.invalidConfiguration, "database \(location): TLS failed: \(underlying)")
            }
            if error.code == .authMechanismRequiresPassword {
                throw HeraldError(.invalidConfiguration, "database \(location): the server wants a password; set HERALD_DATABASE_PASSWORD")
            }
            // The underlying error says what happened (connection refused, a timeout, a reset).
            throw HeraldError(.unavailable, "ledger unavailable: \(location): \(error.underlying.map { "\($0)" } ?? "\(error.code)")")
        } catch {
            throw HeraldError(.unavailable, "ledger unavailable: \(location): \(error)")
        }
    }
}
