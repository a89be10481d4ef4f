import Foundation
import GRDB
import HeraldCore

/// The dispatcher's claim on SQLite (the rest is `Ledger/Webhooks.swift`).
extension SQLiteStore {
    public func claimWebhookDeliveries(endpoint: String, limit: Int, lease: TimeInterval, now: Date) throws -> [WebhookDelivery] {
        let at = now.milliseconds
        let until = at + Int64(lease * 1000)
        // An idle endpoint is polled often: a read finds nothing due without taking the write lock the worker's
        // commits need.
        let due = try pool.read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: Self.dueProbe), arguments: ["endpoint": endpoint, "now": at]) ?? false
        }
        guard due else { return [] }
        return try pool.write { db in
            try Row.fetchAll(
                db.cachedStatement(sql: Self.claimDue),
                arguments: ["lease": until, "endpoint": endpoint, "now": at, "limit": limit]
            ).map { Records.webhookDelivery($0, leaseUntil: until) }.sorted { $0.id < $1.id }
        }
    }

    private static let dueProbe = "SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE \(WebhookStatements.due))"

    private static let claimDue = """
        UPDATE webhook_deliveries SET attempts = attempts + 1, lease_until = :lease
        WHERE id IN (SELECT id FROM webhook_deliveries WHERE \(WebhookStatements.due) ORDER BY next_attempt_at, id LIMIT :limit)
        RETURNING \(WebhookStatements.claimed())
        """
}
