import Foundation
import GRDB

/// Counts committed transactions.
final class CommitCounter: TransactionObserver, @unchecked Sendable {
    let onCommit: () -> Void
    init(_ onCommit: @escaping () -> Void) { self.onCommit = onCommit }
    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { true }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseDidCommit(_ db: Database) { onCommit() }
    func databaseDidRollback(_ db: Database) {}
}

/// A value shared by test threads.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
}
