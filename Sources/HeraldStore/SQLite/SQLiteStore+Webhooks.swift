import Foundation
import GRDB
import HeraldCore

/// Webhook deliveries: written inside the transactions that change state, claimed and recorded by the dispatcher.
extension SQLiteStore {
    /// `x` (Unix milliseconds) as `2026-11-26T09:41:07.123Z`.
    private static func iso(_ x: String) -> String { "strftime('%Y-%m-%dT%H:%M:%fZ', \(x) / 1000.0, 'unixepoch')" }

    /// The `message` object of a payload, from the outbox row `o`: never the code or the link.
    private static let messageJSON = """
        json_object('id', CAST(o.id AS TEXT), 'action', o.action, 'recipient', o.recipient, 'campaign', o.campaign_id,
            'state', o.state, 'attempts', o.attempts, 'queuedAt', \(iso("o.queued_at")), 'sentAt', \(iso("o.sent_at")))
        """

    /// The envelope every payload shares: `id`, `type`, `occurredAt`, then the event's own fields, then `:extra`
    /// (a JSON object) merged in.
    private static func payload(_ fields: String) -> String {
        "json_patch(json_object('id', :eventID, 'type', :event, 'occurredAt', \(iso(":at")), \(fields)), :extra)"
    }

    /// The fields of an event about a message, with the row as it is after the change.
    private static let messageFields = """
        'message', \(messageJSON),
        'smtpReply', json(CASE WHEN :event IN ('sent','failed','dead') AND o.last_reply IS NOT NULL
            THEN json_object('code', o.last_reply_code, 'text', o.last_reply) END),
        'reason', CASE WHEN :event IN ('expired','bounced') THEN o.last_reply END
        """

    /// The fields of an event about a link: the message that carried it, if any, and what the code was for.
    private static let linkFields = """
        'message', json(CASE WHEN o.id IS NOT NULL THEN \(messageJSON) END),
        'link', json_object('action', c.action, 'email', c.email, 'expiresAt', \(iso("c.expires_at")),
            'redeemedAt', \(iso("c.redeemed_at")))
        """

    /// An event about an outbox row (sent, failed, dead, expired, bounced); with `:state`, only while the row is in it.
    private static let messageEvent = """
        INSERT INTO webhook_deliveries (event_id, endpoint, event, outbox_id, payload, created_at, state, next_attempt_at)
        SELECT :eventID, :endpoint, :event, o.id, \(payload(messageFields)), :at, 'queued', :at
        FROM outbox o WHERE o.id = :outboxID AND (:state IS NULL OR o.state = :state)
        """

    /// An event about a link (clicked, redeemed).
    private static let codeEvent = """
        INSERT INTO webhook_deliveries (event_id, endpoint, event, outbox_id, payload, created_at, state, next_attempt_at)
        SELECT :eventID, :endpoint, :event, c.outbox_id, \(payload(linkFields)), :at, 'queued', :at
        FROM action_codes c LEFT JOIN outbox o ON o.id = c.outbox_id WHERE c.id = :codeID
        """

    /// Writes `event` about outbox row `outboxID` for every endpoint that listens, in the caller's transaction;
    /// with `state`, only while the row is in it. Nothing at all when no endpoint listens.
    func emitWebhook(_ db: Database, _ event: WebhookEvent, outboxID: Int64, at: Int64, state: String? = nil, extra: String = "{}") throws {
        try emit(db, event, sql: Self.messageEvent, at: at, extra: extra, ["outboxID": outboxID, "state": state])
    }

    /// Writes `event` about the link of code `codeID` for every endpoint that listens, in the caller's transaction.
    func emitWebhook(_ db: Database, _ event: WebhookEvent, codeID: Int64, at: Int64, extra: String = "{}") throws {
        try emit(db, event, sql: Self.codeEvent, at: at, extra: extra, ["codeID": codeID])
    }

    /// Runs `sql` once per endpoint listening to `event`, all rows sharing one event id.
    private func emit(_ db: Database, _ event: WebhookEvent, sql: String, at: Int64, extra: String, _ subject: StatementArguments) throws {
        let endpoints = webhooks.endpoints(for: event)
        guard !endpoints.isEmpty else { return }
        let statement = try db.cachedStatement(sql: sql)
        let eventID = WebhookPayloads.newEventID()
        for endpoint in endpoints {
            var arguments: StatementArguments = ["eventID": eventID, "endpoint": endpoint, "event": event.rawValue, "at": at, "extra": extra]
            arguments += subject
            try statement.execute(arguments: arguments)
        }
    }

    public func claimWebhookDeliveries(endpoint: String, limit: Int, lease: TimeInterval, now: Date) throws -> [WebhookDelivery] {
        let at = now.milliseconds
        let until = at + Int64(lease * 1000)
        // An idle endpoint is polled often: a read finds nothing due without taking the write lock the worker's
        // commits need.
        let due = try pool.read { db in
            try Bool.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE state = 'queued' AND endpoint = ? AND next_attempt_at <= ?
                            AND (lease_until IS NULL OR lease_until < ?))
                        """), arguments: [endpoint, at, at]) ?? false
        }
        guard due else { return [] }
        return try pool.write { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE webhook_deliveries SET attempts = attempts + 1, lease_until = :lease
                        WHERE id IN (
                            SELECT id FROM webhook_deliveries
                            WHERE state = 'queued' AND endpoint = :endpoint AND next_attempt_at <= :now
                              AND (lease_until IS NULL OR lease_until < :now)
                            ORDER BY next_attempt_at, id LIMIT :limit)
                        RETURNING id, event_id, endpoint, event, payload, attempts
                        """),
                arguments: ["lease": until, "endpoint": endpoint, "now": at, "limit": limit]
            ).map { Records.webhookDelivery($0, leaseUntil: until) }.sorted { $0.id < $1.id }
        }
    }

    public func recordWebhookDelivery(_ delivery: WebhookDelivery, _ outcome: WebhookOutcome) throws {
        try pool.write { db in
            try db.execute(
                sql: """
                    UPDATE webhook_deliveries SET state = :state, lease_until = NULL, last_attempt_at = :at,
                        next_attempt_at = COALESCE(:next, next_attempt_at), delivered_at = CASE WHEN :state = 'delivered' THEN :at END,
                        last_status = :status, last_error = :error
                    WHERE id = :id AND lease_until = :lease
                    """,
                arguments: StatementArguments(WebhookPayloads.deliveryUpdate(delivery, outcome)))
        }
    }

    public func releaseWebhookDeliveries(_ deliveries: [WebhookDelivery], next: Date) throws {
        guard !deliveries.isEmpty else { return }
        try pool.write { db in
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE webhook_deliveries SET attempts = attempts - 1, lease_until = NULL, next_attempt_at = ?
                    WHERE id = ? AND lease_until = ?
                    """)
            for delivery in deliveries {
                try statement.execute(arguments: [next.milliseconds, delivery.id, delivery.leaseUntil.milliseconds])
            }
        }
    }

    public func webhookSummaries() throws -> [WebhookEndpointSummary] {
        try pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT endpoint, SUM(state = 'queued') AS queued, SUM(state = 'delivered') AS delivered, SUM(state = 'dead') AS dead,
                        MIN(CASE WHEN state = 'queued' THEN created_at END) AS oldest_queued, MAX(delivered_at) AS last_delivered,
                        (SELECT w.last_error FROM webhook_deliveries w WHERE w.endpoint = d.endpoint AND w.last_error IS NOT NULL
                            ORDER BY w.last_attempt_at DESC LIMIT 1) AS last_error,
                        (SELECT MAX(w.last_attempt_at) FROM webhook_deliveries w WHERE w.endpoint = d.endpoint AND w.last_error IS NOT NULL)
                            AS last_error_at
                    FROM webhook_deliveries d GROUP BY endpoint ORDER BY endpoint
                    """
            ).map(Records.webhookSummary)
        }
    }

    public func replayWebhookDeliveries(_ filter: WebhookReplayFilter, now: Date) throws -> Int {
        try pool.write { db in
            try db.execute(
                sql: """
                    UPDATE webhook_deliveries SET state = 'queued', attempts = 0, lease_until = NULL, next_attempt_at = :now,
                        delivered_at = NULL
                    WHERE (:endpoint IS NULL OR endpoint = :endpoint) AND (:state IS NULL OR state = :state)
                      AND (:since IS NULL OR created_at >= :since) AND (:id IS NULL OR id = :id)
                      AND NOT (state = 'queued' AND lease_until >= :now)
                    """,
                arguments: [
                    "now": now.milliseconds, "endpoint": filter.endpoint, "state": filter.state?.rawValue,
                    "since": filter.since?.milliseconds, "id": filter.id,
                ])
            return db.changesCount
        }
    }
}
