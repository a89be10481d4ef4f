import Foundation
import HeraldCore

/// Row decoders for the smaller records, shared by both stores.
extension Records {
    static func identity(_ plain: some LedgerRow) -> FederatedIdentity {
        let row = RecordRow(plain)
        return FederatedIdentity(
            providerId: row["provider_id"], rawId: row["raw_id"], email: row["email"], emailVerified: row["email_verified"],
            displayName: row["display_name"], photoURL: row["photo_url"], screenName: row["screen_name"])
    }

    static func suppression(_ plain: some LedgerRow) throws -> Suppression {
        let row = RecordRow(plain)
        guard let reason = Suppression.Reason(rawValue: row["reason"]), let scope = Suppression.Scope(rawValue: row["scope"]) else {
            throw HeraldError(.notFound, "suppression of \(row["email"] as String) has an unknown reason or scope")
        }
        return Suppression(
            email: row["email"], reason: reason, scope: scope, detail: row["detail"], outboxID: row["outbox_id"],
            createdAt: Date(milliseconds: row["created_at"]), expiresAt: (row["expires_at"] as Int64?).map(Date.init(milliseconds:)))
    }

    /// A `delivery_attempts` row.
    static func attempt(_ plain: some LedgerRow) -> DeliveryAttempt {
        let row = RecordRow(plain)
        return DeliveryAttempt(
            outboxID: row["outbox_id"], attempt: row["attempt"], outcome: row["outcome"],
            replyCode: row["reply_code"], replyText: row["reply_text"],
            startedAt: Date(milliseconds: row["started_at"]), finishedAt: Date(milliseconds: row["finished_at"]))
    }

    /// A row of the message audit's query.
    static func audit(_ plain: some LedgerRow) -> AuditRow {
        let row = RecordRow(plain)
        return AuditRow(
            id: row["id"], recipient: row["recipient"], action: row["action"], campaign: row["campaign_id"], state: row["state"],
            queuedAt: Date(milliseconds: row["queued_at"]), sentAt: (row["sent_at"] as Int64?).map(Date.init(milliseconds:)),
            smtpReply: row["smtp_reply"], firstClickAt: (row["first_click_at"] as Int64?).map(Date.init(milliseconds:)),
            redeemedAt: (row["redeemed_at"] as Int64?).map(Date.init(milliseconds:)), redeemedIP: row["redeemed_ip"],
            redeemedUserAgent: row["redeemed_user_agent"], expired: row["expired"], superseded: row["superseded"],
            feedbackAt: (row["feedback_at"] as Int64?).map(Date.init(milliseconds:)), feedback: row["feedback"],
            redeemedWith: row["redeemed_with"], email: (row["email"] as String?).flatMap { $0 == row["recipient"] ? nil : $0 })
    }

    /// An `account_events` row joined with its account's `email`.
    static func accountEvent(_ plain: some LedgerRow) -> AccountEventRow {
        let row = RecordRow(plain)
        return AccountEventRow(
            id: row["id"], at: Date(milliseconds: row["at"]), uid: row["uid"], email: row["email"], kind: row["kind"],
            providerId: row["provider_id"], rawId: row["detail"], ip: row["ip"], userAgent: row["user_agent"])
    }

    /// An `accounts` row of `email`, `disabled`, `email_verified` and `display_name`, keyed by its lowercased address.
    static func standing(_ plain: some LedgerRow) -> (email: String, standing: AccountStanding) {
        let row = RecordRow(plain)
        return (
            (row["email"] as String).lowercased(),
            AccountStanding(disabled: row["disabled"], emailVerified: row["email_verified"], displayName: row["display_name"])
        )
    }

    static func refreshToken(_ plain: some LedgerRow, hash: [UInt8]) -> RefreshTokenRecord {
        let row = RecordRow(plain)
        return RefreshTokenRecord(
            hash: hash, uid: row["uid"], provider: row["provider"], issuedAt: Date(milliseconds: row["issued_at"]),
            revoked: (row["revoked"] as String?).flatMap(HeraldError.Code.init(rawValue:)))
    }

    static func abuseCount(_ plain: some LedgerRow) -> AbuseCount {
        let row = RecordRow(plain)
        return AbuseCount(
            counter: row["counter"], key: row["key"], hour: Date(timeIntervalSince1970: Double(row["hour"] as Int64) * 3600),
            count: row["count"])
    }

    /// A row a webhook claim returned, leased until `until` (Unix milliseconds).
    static func webhookDelivery(_ plain: some LedgerRow, leaseUntil until: Int64) -> WebhookDelivery {
        let row = RecordRow(plain)
        return WebhookDelivery(
            id: row["id"], eventID: row["event_id"], endpoint: row["endpoint"], event: row["event"], payload: row["payload"],
            attempts: row["attempts"], leaseUntil: Date(milliseconds: until))
    }

    static func webhookFailure(_ plain: some LedgerRow) -> WebhookFailure {
        let row = RecordRow(plain)
        return WebhookFailure(
            id: row["id"], endpoint: row["endpoint"], event: row["event"], state: WebhookDeliveryState(rawValue: row["state"]) ?? .queued,
            attempts: row["attempts"], lastStatus: row["last_status"], lastError: row["last_error"],
            lastAttemptAt: (row["last_attempt_at"] as Int64?).map(Date.init(milliseconds:)),
            createdAt: Date(milliseconds: row["created_at"]))
    }
}
