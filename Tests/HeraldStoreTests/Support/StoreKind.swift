import Foundation
import HeraldStore
import HeraldTesting
import Testing

/// Every implementation of `HeraldStore`: the store suites run each test body against all of them,
/// as GRDB runs its tests on both `DatabaseQueue` and `DatabasePool`.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// `SQLiteStore` on a WAL file of its own.
    case sqlite

    var testDescription: String { rawValue }

    /// Opens the ledger called `name` in `scratch`, creating it empty the first time; opening the
    /// same name again reaches the same ledger, as a second process would. `webhooks` are the endpoints it writes
    /// deliveries for.
    func makeStore(in scratch: ScratchDirectory, name: String = "ledger", webhooks: WebhookRouting = .none) throws -> any HeraldStore {
        switch self {
        case .sqlite: try SQLiteStore(path: scratch.path("\(name).sqlite"), webhooks: webhooks)
        }
    }
}
