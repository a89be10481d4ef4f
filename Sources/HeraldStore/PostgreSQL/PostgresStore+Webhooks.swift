import Foundation
import HeraldCore

/// Webhook deliveries: written inside the transactions that change state, claimed and recorded by the dispatcher.
///
/// Payloads are built in SQL as compact JSON text with the members in the same order as SQLite's `json_object`
/// (PostgreSQL's own `json_build_object` writes `"k" : v`, and `jsonb` reorders keys).
extension PostgresStore {
    /// `x` (Unix milliseconds) as `2026-11-26T09:41:07.123Z`: integer arithmetic, no time zone.
    private static func iso(_ x: String) -> String {
        #"to_char(TIMESTAMP 'epoch' + CAST((\#(x)) AS DOUBLE PRECISION) * INTERVAL '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"#
    }

    /// A scalar's JSON text: a string, a number, or `null` for NULL.
    private static func value(_ x: String) -> String { "COALESCE(to_json(\(x))::text, 'null')" }

    /// JSON text that may be NULL, as a member's value: `null` for NULL.
    private static func json(_ x: String) -> String { "COALESCE(\(x), 'null')" }

    /// `"key":value,…` of `members` (each a key and SQL giving its JSON text), in order.
    private static func members(_ members: [(String, String)]) -> String {
        members.map { "'\"\($0.0)\":' || \($0.1)" }.joined(separator: " || ',' || ")
    }

    /// A compact JSON object of `members`, as text.
    private static func object(_ members: [(String, String)]) -> String {
        "('{' || \(Self.members(members)) || '}')"
    }

    /// The `message` object of a payload, from the outbox row `o`: never the code or the link.
    private static let messageJSON = object([
        ("id", value("CAST(o.id AS TEXT)")), ("action", value("o.action")), ("recipient", value("o.recipient")),
        ("campaign", value("o.campaign_id")), ("state", value("o.state")), ("attempts", value("o.attempts")),
        ("queuedAt", value(iso("o.queued_at"))), ("sentAt", value(iso("o.sent_at"))),
    ])

    /// The envelope every payload shares: `id`, `type`, `occurredAt`, then the event's own fields, then `:tail`,
    /// the members of the caller's `extra` object and the closing brace (see `tail`).
    private static func payload(_ fields: [(String, String)]) -> String {
        let envelope = [("id", value(":eventID::text")), ("type", value(":event::text")), ("occurredAt", value(iso(":at::bigint")))]
        return "('{' || \(members(envelope + fields)) || :tail::text)"
    }

    /// The fields of an event about a message, with the row as it is after the change.
    private static let messageFields: [(String, String)] = [
        ("message", messageJSON),
        (
            "smtpReply",
            json(
                """
                CASE WHEN :event::text IN ('sent','failed','dead') AND o.last_reply IS NOT NULL
                    THEN \(object([("code", value("o.last_reply_code")), ("text", value("o.last_reply"))])) END
                """)
        ),
        ("reason", value("CASE WHEN :event::text IN ('expired','bounced') THEN o.last_reply END")),
    ]

    /// The fields of an event about a link: the message that carried it, if any, and what the code was for.
    private static let linkFields: [(String, String)] = [
        ("message", json("CASE WHEN o.id IS NOT NULL THEN \(messageJSON) END")),
        (
            "link",
            object([
                ("action", value("c.action")), ("email", value("c.email")), ("expiresAt", value(iso("c.expires_at"))),
                ("redeemedAt", value(iso("c.redeemed_at"))),
            ])
        ),
    ]

    /// An event about an outbox row (sent, failed, dead, expired, bounced); with `:state`, only while the row is in
    /// it. One row per endpoint of `:endpoints`, in their order (ids ascending as SQLite's loop wrote them).
    private static let messageEvent = """
        INSERT INTO webhook_deliveries (event_id, endpoint, event, outbox_id, payload, created_at, state, next_attempt_at)
        SELECT :eventID, e.endpoint, :event, o.id, \(payload(messageFields)), :at, 'queued', :at
        FROM unnest(:endpoints::text[]) WITH ORDINALITY AS e(endpoint, n)
        CROSS JOIN outbox o
        WHERE o.id = :outboxID AND (:state::text IS NULL OR o.state = :state)
        ORDER BY e.n
        """

    /// An event about a link (clicked, redeemed).
    private static let codeEvent = """
        INSERT INTO webhook_deliveries (event_id, endpoint, event, outbox_id, payload, created_at, state, next_attempt_at)
        SELECT :eventID, e.endpoint, :event, c.outbox_id, \(payload(linkFields)), :at, 'queued', :at
        FROM unnest(:endpoints::text[]) WITH ORDINALITY AS e(endpoint, n)
        CROSS JOIN action_codes c LEFT JOIN outbox o ON o.id = c.outbox_id
        WHERE c.id = :codeID
        ORDER BY e.n
        """

    /// Writes `event` about outbox row `outboxID` for every endpoint that listens, in the caller's transaction;
    /// with `state`, only while the row is in it. Nothing at all when no endpoint listens.
    func emitWebhook(
        _ db: PostgresSession, _ event: WebhookEvent, outboxID: Int64, at: Int64, state: String? = nil, extra: String = "{}"
    ) throws {
        try emit(db, event, sql: Self.messageEvent, at: at, extra: extra, ["outboxID": outboxID, "state": state])
    }

    /// Writes `event` about the link of code `codeID` for every endpoint that listens, in the caller's transaction.
    func emitWebhook(_ db: PostgresSession, _ event: WebhookEvent, codeID: Int64, at: Int64, extra: String = "{}") throws {
        try emit(db, event, sql: Self.codeEvent, at: at, extra: extra, ["codeID": codeID])
    }

    /// Runs `sql` once for all the endpoints listening to `event`, every row sharing one event id.
    private func emit(_ db: PostgresSession, _ event: WebhookEvent, sql: String, at: Int64, extra: String, _ subject: SQLArguments) throws {
        let endpoints = webhooks.endpoints(for: event)
        guard !endpoints.isEmpty else { return }
        let arguments: SQLArguments = [
            "eventID": WebhookPayloads.newEventID(), "endpoints": endpoints, "event": event.rawValue, "at": at, "tail": Self.tail(extra),
        ]
        try db.execute(sql, arguments + subject)
    }

    /// What follows the envelope's own members: `}`, or `,` and the members of `extra` (a JSON object) with its
    /// `}` — SQLite's `json_patch` of keys the envelope lacks, which are the only ones callers pass.
    private static func tail(_ extra: String) -> String {
        let body = extra.trimmingCharacters(in: .whitespacesAndNewlines)
        guard body.count >= 2, body.hasPrefix("{"), body.hasSuffix("}") else { return "}" }
        let inner = body.dropFirst().dropLast().trimmingCharacters(in: .whitespacesAndNewlines)
        return inner.isEmpty ? "}" : ",\(inner)}"
    }

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
                    SELECT id FROM webhook_deliveries
                    WHERE state = 'queued' AND endpoint = :endpoint AND next_attempt_at <= :now
                      AND (lease_until IS NULL OR lease_until < :now)
                    ORDER BY next_attempt_at, id LIMIT :limit
                    FOR UPDATE SKIP LOCKED)
                UPDATE webhook_deliveries w SET attempts = w.attempts + 1, lease_until = :lease
                FROM due WHERE w.id = due.id
                RETURNING w.id, w.event_id, w.endpoint, w.event, w.payload, w.attempts
                """,
                ["lease": until, "endpoint": endpoint, "now": at, "limit": limit]
            ).map { Records.webhookDelivery($0, leaseUntil: until) }.sorted { $0.id < $1.id }
        }
    }

    public func recordWebhookDelivery(_ delivery: WebhookDelivery, _ outcome: WebhookOutcome) throws {
        let arguments = SQLArguments(named: WebhookPayloads.deliveryUpdate(delivery, outcome))
        _ = try pool.write { db in
            try db.execute(
                """
                UPDATE webhook_deliveries SET state = :state::text, lease_until = NULL, last_attempt_at = :at::bigint,
                    next_attempt_at = COALESCE(:next::bigint, next_attempt_at),
                    delivered_at = CASE WHEN :state::text = 'delivered' THEN :at::bigint END,
                    last_status = :status::bigint, last_error = :error::text
                WHERE id = :id AND lease_until = :lease
                """, arguments)
        }
    }

    public func releaseWebhookDeliveries(_ deliveries: [WebhookDelivery], next: Date) throws {
        guard !deliveries.isEmpty else { return }
        let ids = deliveries.map(\.id)
        let leases = deliveries.map { $0.leaseUntil.milliseconds }
        _ = try pool.write { db in
            try db.execute(
                """
                UPDATE webhook_deliveries w SET attempts = w.attempts - 1, lease_until = NULL, next_attempt_at = ?
                FROM unnest(?::bigint[], ?::bigint[]) AS r(id, lease)
                WHERE w.id = r.id AND w.lease_until = r.lease
                """, [next.milliseconds, ids, leases])
        }
    }

    public func webhookSummaries() throws -> [WebhookEndpointSummary] {
        try pool.read { db in
            try db.fetchAll(
                """
                SELECT endpoint, COUNT(*) FILTER (WHERE state = 'queued') AS queued,
                    COUNT(*) FILTER (WHERE state = 'delivered') AS delivered, COUNT(*) FILTER (WHERE state = 'dead') AS dead,
                    MIN(created_at) FILTER (WHERE state = 'queued') AS oldest_queued, MAX(delivered_at) AS last_delivered,
                    (SELECT w.last_error FROM webhook_deliveries w WHERE w.endpoint = d.endpoint AND w.last_error IS NOT NULL
                        ORDER BY w.last_attempt_at DESC NULLS LAST, w.id DESC LIMIT 1) AS last_error,
                    (SELECT MAX(w.last_attempt_at) FROM webhook_deliveries w WHERE w.endpoint = d.endpoint AND w.last_error IS NOT NULL)
                        AS last_error_at
                FROM webhook_deliveries d GROUP BY endpoint ORDER BY endpoint COLLATE "C"
                """
            ).map(Records.webhookSummary)
        }
    }

    public func replayWebhookDeliveries(_ filter: WebhookReplayFilter, now: Date) throws -> Int {
        let arguments: SQLArguments = [
            "now": now.milliseconds, "endpoint": filter.endpoint, "state": filter.state?.rawValue,
            "since": filter.since?.milliseconds, "id": filter.id,
        ]
        return try pool.write { db in
            try db.execute(
                """
                UPDATE webhook_deliveries SET state = 'queued', attempts = 0, lease_until = NULL, next_attempt_at = :now,
                    delivered_at = NULL
                WHERE (:endpoint::text IS NULL OR endpoint = :endpoint) AND (:state::text IS NULL OR state = :state)
                  AND (:since::bigint IS NULL OR created_at >= :since) AND (:id::bigint IS NULL OR id = :id)
                  AND NOT (state = 'queued' AND lease_until >= :now)
                """, arguments)
        }
    }
}
