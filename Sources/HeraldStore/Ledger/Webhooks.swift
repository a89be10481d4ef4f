import Foundation
import HeraldCore

/// Webhook deliveries: written inside the transactions that change state, claimed and recorded by the dispatcher.
///
/// Each engine claims deliveries its own way (`claimWebhookDeliveries`: SQLite probes before taking the write
/// lock, PostgreSQL skips rows other dispatchers locked); the statements' shared parts are `WebhookStatements`.
extension LedgerEngine {
    /// Writes `event` about outbox row `outboxID` for every endpoint that listens, in the caller's transaction;
    /// with `state`, only while the row is in it. Nothing at all when no endpoint listens.
    func emitWebhook(_ db: Session, _ event: WebhookEvent, outboxID: Int64, at: Int64, state: String? = nil, extra: String = "{}") throws {
        try emit(db, event, sql: WebhookStatements.messageEvent(db.dialect), at: at, extra: extra, ["outboxID": outboxID, "state": state])
    }

    /// Writes `event` about the link of code `codeID` for every endpoint that listens, in the caller's transaction.
    func emitWebhook(_ db: Session, _ event: WebhookEvent, codeID: Int64, at: Int64, extra: String = "{}") throws {
        try emit(db, event, sql: WebhookStatements.codeEvent(db.dialect), at: at, extra: extra, ["codeID": codeID])
    }

    /// Writes one row per endpoint listening to `event`, all sharing one event id.
    private func emit(_ db: Session, _ event: WebhookEvent, sql: String, at: Int64, extra: String, _ subject: SQLArguments) throws {
        let endpoints = webhooks.endpoints(for: event)
        guard !endpoints.isEmpty else { return }
        let arguments = subject + ["eventID": WebhookPayloads.newEventID(), "event": event.rawValue, "at": at]
        switch db.dialect {
        case .sqlite:
            // One statement per endpoint, kept prepared: a recorded delivery emits its event in the record's write.
            var perEndpoint = arguments + ["extra": extra]
            for endpoint in endpoints {
                perEndpoint.named["endpoint"] = .text(endpoint)
                try db.executeCached(sql, perEndpoint)
            }
        case .postgres:
            // One statement for all the endpoints.
            try db.execute(sql, arguments + ["endpoints": endpoints, "tail": WebhookPayloads.tail(extra)])
        }
    }

    public func recordWebhookDelivery(_ delivery: WebhookDelivery, _ outcome: WebhookOutcome) throws {
        let arguments = SQLArguments(named: WebhookPayloads.deliveryUpdate(delivery, outcome))
        try write { db in
            let d = db.dialect
            let at = d.parameter("at", .bigint)
            try db.execute(
                """
                UPDATE webhook_deliveries SET state = \(d.parameter("state", .text)), lease_until = NULL, last_attempt_at = \(at),
                    next_attempt_at = COALESCE(\(d.parameter("next", .bigint)), next_attempt_at),
                    delivered_at = CASE WHEN \(d.parameter("state", .text)) = 'delivered' THEN \(at) END,
                    last_status = \(d.parameter("status", .bigint)), last_error = \(d.parameter("error", .text))
                WHERE id = :id AND lease_until = :lease
                """, arguments)
        }
    }

    public func releaseWebhookDeliveries(_ deliveries: [WebhookDelivery], next: Date) throws {
        guard !deliveries.isEmpty else { return }
        try write { db in
            switch db.dialect {
            case .sqlite:
                for delivery in deliveries {
                    try db.executeCached(
                        """
                        UPDATE webhook_deliveries SET attempts = attempts - 1, lease_until = NULL, next_attempt_at = ?
                        WHERE id = ? AND lease_until = ?
                        """, [next.milliseconds, delivery.id, delivery.leaseUntil.milliseconds])
                }
            case .postgres:
                // One statement for them all.
                try db.execute(
                    """
                    UPDATE webhook_deliveries w SET attempts = w.attempts - 1, lease_until = NULL, next_attempt_at = ?
                    FROM unnest(?::bigint[], ?::bigint[]) AS r(id, lease)
                    WHERE w.id = r.id AND w.lease_until = r.lease
                    """, [next.milliseconds, deliveries.map(\.id), deliveries.map { $0.leaseUntil.milliseconds }])
            }
        }
    }

    /// Each endpoint's deliveries by state from the rollups, and its oldest waiting delivery, last delivery and last
    /// error each from an index: the same few rows whatever the ledger holds.
    public func webhookSummaries() throws -> [WebhookEndpointSummary] {
        try read { db in
            var counts: [String: [WebhookDeliveryState: Int]] = [:]
            for row in try Self.rollup(db, .webhooks) {
                let (state, endpoint) = row.labelParts
                guard let state = WebhookDeliveryState(rawValue: state), !endpoint.isEmpty else { continue }
                counts[endpoint, default: [:]][state, default: 0] += row.count
            }
            return try counts.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { endpoint in
                let states = counts[endpoint] ?? [:]
                let oldest = try db.value(
                    "SELECT MIN(created_at) FROM webhook_deliveries WHERE endpoint = ? AND state = 'queued'", [endpoint], as: Int64.self)
                let delivered = try db.value(
                    "SELECT MAX(delivered_at) FROM webhook_deliveries WHERE endpoint = ? AND delivered_at IS NOT NULL", [endpoint],
                    as: Int64.self)
                let error = try db.row(
                    """
                    SELECT last_error, last_attempt_at FROM webhook_deliveries
                    WHERE endpoint = ? AND last_error IS NOT NULL AND last_attempt_at IS NOT NULL ORDER BY last_attempt_at DESC, id DESC LIMIT 1
                    """, [endpoint])
                return WebhookEndpointSummary(
                    endpoint: endpoint, queued: states[.queued] ?? 0, delivered: states[.delivered] ?? 0, dead: states[.dead] ?? 0,
                    oldestQueuedAt: oldest.map(Date.init(milliseconds:)), lastDeliveredAt: delivered.map(Date.init(milliseconds:)),
                    lastError: error?["last_error"], lastErrorAt: (error?["last_attempt_at"] as Int64?).map(Date.init(milliseconds:)))
            }
        }
    }

    public func recentWebhookFailures(limit: Int) throws -> [WebhookFailure] {
        try read { db in
            try db.fetchAll(
                """
                SELECT id, endpoint, event, state, attempts, last_status, last_error, last_attempt_at, created_at
                FROM webhook_deliveries WHERE last_error IS NOT NULL AND state <> 'delivered'
                ORDER BY last_attempt_at DESC NULLS LAST, id DESC LIMIT :limit
                """, ["limit": max(1, limit)]
            ).map(Records.webhookFailure)
        }
    }

    public func replayWebhookDeliveries(_ filter: WebhookReplayFilter, now: Date) throws -> Int {
        let arguments: SQLArguments = [
            "now": now.milliseconds, "endpoint": filter.endpoint, "state": filter.state?.rawValue,
            "since": filter.since?.milliseconds, "id": filter.id,
        ]
        return try write { db in
            let d = db.dialect
            return try db.execute(
                """
                UPDATE webhook_deliveries SET state = 'queued', attempts = 0, lease_until = NULL, next_attempt_at = :now,
                    delivered_at = NULL
                WHERE (\(d.parameter("endpoint", .text)) IS NULL OR endpoint = :endpoint)
                  AND (\(d.parameter("state", .text)) IS NULL OR state = :state)
                  AND (\(d.parameter("since", .bigint)) IS NULL OR created_at >= :since)
                  AND (\(d.parameter("id", .bigint)) IS NULL OR id = :id)
                  AND NOT (state = 'queued' AND lease_until >= :now)
                """, arguments)
        }
    }
}

/// The statements that write and claim deliveries, each made once per dialect.
///
/// A payload is built in SQL from one description (`Field`): SQLite with its JSON functions, PostgreSQL as compact
/// JSON text with the members in the same order (its own `json_build_object` writes `"k" : v`, and `jsonb` reorders
/// keys).
enum WebhookStatements {
    /// An event about an outbox row (sent, failed, dead, possibly-delivered, expired, bounced); with `:state`, only while
    /// the row is in it.
    static func messageEvent(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqliteMessageEvent
        case .postgres: postgresMessageEvent
        }
    }

    /// An event about a link (clicked, redeemed).
    static func codeEvent(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqliteCodeEvent
        case .postgres: postgresCodeEvent
        }
    }

    /// The deliveries of `:endpoint` a claim may take at `:now`: queued, due, and not leased.
    static let due = """
        state = 'queued' AND endpoint = :endpoint AND next_attempt_at <= :now AND (lease_until IS NULL OR lease_until < :now)
        """

    /// The columns a claim returns (`Records.webhookDelivery`), each prefixed with `table`.
    static func claimed(_ table: String = "") -> String {
        ["id", "event_id", "endpoint", "event", "payload", "attempts"].map { table + $0 }.joined(separator: ", ")
    }

    private static let sqliteMessageEvent = messageEvent(for: .sqlite)
    private static let postgresMessageEvent = messageEvent(for: .postgres)
    private static let sqliteCodeEvent = codeEvent(for: .sqlite)
    private static let postgresCodeEvent = codeEvent(for: .postgres)

    /// On SQLite one row for `:endpoint` (its caller runs the statement once per endpoint); on PostgreSQL one row per
    /// endpoint of `:endpoints`, in their order (ids ascending as SQLite's loop writes them).
    private static func messageEvent(for d: SQLDialect) -> String {
        """
        INSERT INTO webhook_deliveries (event_id, endpoint, event, outbox_id, payload, created_at, state, next_attempt_at)
        SELECT :eventID, \(endpoint(d)), :event, o.id, \(payload(d, messageFields(d))), :at, 'queued', :at
        FROM \(endpoints(d))outbox o
        WHERE o.id = :outboxID AND (\(d.parameter("state", .text)) IS NULL OR o.state = :state)\(inOrder(d))
        """
    }

    private static func codeEvent(for d: SQLDialect) -> String {
        """
        INSERT INTO webhook_deliveries (event_id, endpoint, event, outbox_id, payload, created_at, state, next_attempt_at)
        SELECT :eventID, \(endpoint(d)), :event, c.outbox_id, \(payload(d, linkFields)), :at, 'queued', :at
        FROM \(endpoints(d))action_codes c LEFT JOIN outbox o ON o.id = c.outbox_id
        WHERE c.id = :codeID\(inOrder(d))
        """
    }

    private static func endpoint(_ d: SQLDialect) -> String {
        switch d {
        case .sqlite: ":endpoint"
        case .postgres: "e.endpoint"
        }
    }

    private static func endpoints(_ d: SQLDialect) -> String {
        switch d {
        case .sqlite: ""
        case .postgres: "unnest(:endpoints::text[]) WITH ORDINALITY AS e(endpoint, n)\nCROSS JOIN "
        }
    }

    private static func inOrder(_ d: SQLDialect) -> String {
        switch d {
        case .sqlite: ""
        case .postgres: "\nORDER BY e.n"
        }
    }

    /// A member's value in a payload.
    private enum Field: Sendable {
        /// A scalar (text, number or NULL, which is `null`).
        case value(String)
        /// A time (Unix milliseconds) as `2026-11-26T09:41:07.123Z`, or `null`.
        case time(String)
        /// An object of these members, in order.
        case object([(String, Field)])
        /// The object when the condition holds, else `null`.
        case objectWhen(String, [(String, Field)])
    }

    /// The `message` object of a payload, from the outbox row `o`: never the code or the link.
    private static let message: [(String, Field)] = [
        ("id", .value("CAST(o.id AS TEXT)")), ("action", .value("o.action")), ("recipient", .value("o.recipient")),
        ("campaign", .value("o.campaign_id")), ("state", .value("o.state")), ("attempts", .value("o.attempts")),
        ("queuedAt", .time("o.queued_at")), ("sentAt", .time("o.sent_at")),
    ]

    /// The fields of an event about a message, with the row as it is after the change.
    private static func messageFields(_ d: SQLDialect) -> [(String, Field)] {
        let event = d.parameter("event", .text)
        return [
            ("message", .object(message)),
            (
                "smtpReply",
                .objectWhen(
                    "\(event) IN ('sent','failed','dead') AND o.last_reply IS NOT NULL",
                    [("code", .value("o.last_reply_code")), ("text", .value("o.last_reply"))])
            ),
            ("reason", .value("CASE WHEN \(event) IN ('expired','bounced') THEN o.last_reply END")),
        ]
    }

    /// The fields of an event about a link: the message that carried it, if any, and what the code was for.
    private static let linkFields: [(String, Field)] = [
        ("message", .objectWhen("o.id IS NOT NULL", message)),
        (
            "link",
            .object([
                ("action", .value("c.action")), ("email", .value("c.email")), ("expiresAt", .time("c.expires_at")),
                ("redeemedAt", .time("c.redeemed_at")),
            ])
        ),
    ]

    /// The envelope every payload shares: `id`, `type`, `occurredAt`, then the event's own fields, then the members
    /// of the caller's `extra` object: SQLite patches `:extra` in, PostgreSQL appends `:tail`
    /// (`WebhookPayloads.tail`).
    private static func payload(_ d: SQLDialect, _ fields: [(String, Field)]) -> String {
        let envelope: [(String, Field)] = [
            ("id", .value(d.parameter("eventID", .text))), ("type", .value(d.parameter("event", .text))),
            ("occurredAt", .time(d.parameter("at", .bigint))),
        ]
        switch d {
        case .sqlite: return "json_patch(\(json(d, .object(envelope + fields))), :extra)"
        case .postgres: return "('{' || \(members(d, envelope + fields)) || :tail::text)"
        }
    }

    /// `field` as SQL giving its JSON value.
    private static func json(_ d: SQLDialect, _ field: Field) -> String {
        switch (d, field) {
        case (.sqlite, .value(let x)): x
        case (.sqlite, .time(let x)): "strftime('%Y-%m-%dT%H:%M:%fZ', \(x) / 1000.0, 'unixepoch')"
        case (.sqlite, .object(let members)): "json_object(\(members.map { "'\($0.0)', \(json(d, $0.1))" }.joined(separator: ", ")))"
        case (.sqlite, .objectWhen(let condition, let members)): "json(CASE WHEN \(condition) THEN \(json(d, .object(members))) END)"
        case (.postgres, .value(let x)): "COALESCE(to_json(\(x))::text, 'null')"
        case (.postgres, .time(let x)):
            json(d, .value("to_char(TIMESTAMP 'epoch' + CAST((\(x)) AS DOUBLE PRECISION) * INTERVAL '1 millisecond', \(isoFormat))"))
        case (.postgres, .object(let members)): "('{' || \(self.members(d, members)) || '}')"
        case (.postgres, .objectWhen(let condition, let members)):
            "COALESCE(CASE WHEN \(condition) THEN \(json(d, .object(members))) END, 'null')"
        }
    }

    /// PostgreSQL's `to_char` format of a `.time`, from the epoch plus the milliseconds: no time zone.
    private static let isoFormat = #"'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'"#

    /// `"key":value,…` of `members` as PostgreSQL text, in order.
    private static func members(_ d: SQLDialect, _ members: [(String, Field)]) -> String {
        members.map { "'\"\($0.0)\":' || \(json(d, $0.1))" }.joined(separator: " || ',' || ")
    }
}
