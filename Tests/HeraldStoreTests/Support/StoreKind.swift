import Foundation
import HeraldStore
import HeraldTesting
import Testing

/// Every implementation of `HeraldStore`: the store suites run each test body against all of them,
/// as GRDB runs its tests on both `DatabaseQueue` and `DatabasePool`.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// `SQLiteStore` on a WAL file of its own.
    case sqlite
    /// `PostgresStore` in a schema of its own on the cluster `HERALD_TEST_POSTGRES` names (`make test` starts one).
    case postgres

    /// SQLite always; PostgreSQL where a cluster is given. `make test` always gives one (scripts/with-postgres.sh),
    /// so CI runs both; a bare `swift test` without one runs SQLite's.
    static var allCases: [StoreKind] {
        ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES"] == nil ? [.sqlite] : [.sqlite, .postgres]
    }

    var testDescription: String { rawValue }

    /// Opens the ledger called `name` in `scratch`, creating it empty the first time; opening the
    /// same name again reaches the same ledger, as a second process would. `webhooks` are the endpoints it writes
    /// deliveries for.
    func makeStore(in scratch: ScratchDirectory, name: String = "ledger", webhooks: WebhookRouting = .none) throws -> any HeraldStore {
        switch self {
        case .sqlite: try SQLiteStore(path: scratch.path("\(name).sqlite"), webhooks: webhooks)
        case .postgres: try PostgresStore(location: Self.postgresLocation(scratch.path(name)), poolSize: 4, webhooks: webhooks)
        }
    }

    /// A schema per scratch ledger, named after its path (FNV-1a), on the test cluster.
    static func postgresLocation(_ path: String) throws -> PostgresLocation {
        guard let url = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES"] else {
            throw HeraldTestSkip("HERALD_TEST_POSTGRES is not set")
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        var location = try PostgresLocation(url: url)
        location.schema = "t_" + String(hash, radix: 16)
        return location
    }
}

/// Thrown when a test needs a PostgreSQL cluster and has none.
struct HeraldTestSkip: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
