import Foundation
import HeraldCore

/// The dispatcher's claim on PostgreSQL (the rest is `Ledger/Webhooks.swift`).
extension PostgresStore {
    public func claimWebhookDeliveries(endpoint: String, limit: Int, lease: TimeInterval, now: Date) throws -> [WebhookDelivery] {
        let at = now.milliseconds
        let until = at + Int64(lease * 1000)
        // No read-only probe first, unlike SQLite: an UPDATE that matches nothing takes no lock other writers wait
        // for. READ COMMITTED with SKIP LOCKED: dispatchers in other processes take other rows instead of waiting, and
        // a row another one leased meanwhile is re-checked against its new lease and left out.
        return try pool.write(.readCommitted) { db in
            try db.fetchAll(
                """
                WITH due AS (
                    SELECT id FROM webhook_deliveries WHERE \(WebhookStatements.due)
                    ORDER BY next_attempt_at, id LIMIT :limit
                    FOR UPDATE SKIP LOCKED)
                UPDATE webhook_deliveries w SET attempts = w.attempts + 1, lease_until = :lease
                FROM due WHERE w.id = due.id
                RETURNING \(WebhookStatements.claimed("w."))
                """,
                ["lease": until, "endpoint": endpoint, "now": at, "limit": limit]
            ).map { Records.webhookDelivery($0, leaseUntil: until) }.sorted { $0.id < $1.id }
        }
    }
}
