import Foundation
import HeraldCore

/// Decoding ledger rows of either store into the records of `HeraldCore`, and back into statement arguments.
enum Records {
    static func account(_ plain: some LedgerRow) -> Account {
        let row = RecordRow(plain)
        return Account(
            uid: row["uid"], email: row["email"], emailVerified: row["email_verified"], passwordHash: row["password_hash"],
            displayName: row["display_name"], disabled: row["disabled"], emailLinkSignin: row["email_link_signin"],
            validSince: row["valid_since"], createdAt: Date(milliseconds: row["created_at"]),
            lastLoginAt: (row["last_login_at"] as Int64?).map(Date.init(milliseconds:)),
            providers: (try? JSONDecoder().decode([String].self, from: Data((row["providers"] as String).utf8))) ?? [],
            photoURL: row["photo_url"], initialEmail: row["initial_email"], customAttributes: row["custom_attributes"],
            phoneNumber: row["phone_number"])
    }

    /// The account's columns, named as in `accounts`.
    static func values(_ account: Account) -> [String: SQLValue] {
        let providerJSON = String(decoding: (try? JSONEncoder().encode(account.providers)) ?? Data("[]".utf8), as: UTF8.self)
        let values: [String: (any SQLBindable)?] = [
            "uid": account.uid, "email": account.email, "email_verified": account.emailVerified, "password_hash": account.passwordHash,
            "display_name": account.displayName, "disabled": account.disabled, "email_link_signin": account.emailLinkSignin,
            "photo_url": account.photoURL, "initial_email": account.initialEmail,
            "custom_attributes": account.customAttributes, "phone_number": account.phoneNumber,
            "valid_since": account.validSince, "created_at": account.createdAt.milliseconds,
            "last_login_at": account.lastLoginAt?.milliseconds, "providers": providerJSON,
        ]
        return values.mapValues { $0?.sqlValue ?? .null }
    }

    /// A code row; `campaign_id` is read when the query joined the outbox.
    static func code(_ plain: some LedgerRow) -> CodeRecord? {
        let row = RecordRow(plain)
        guard let kind = ActionKind(rawValue: row["action"]) else { return nil }
        return CodeRecord(
            id: row["id"], kind: kind, email: row["email"], newEmail: row["new_email"], outboxID: row["outbox_id"],
            continueURL: row["continue_url"], campaignID: row.hasColumn("campaign_id") ? row["campaign_id"] : nil,
            createdAt: Date(milliseconds: row["created_at"]), expiresAt: Date(milliseconds: row["expires_at"]),
            redeemedAt: (row["redeemed_at"] as Int64?).map(Date.init(milliseconds:)),
            supersededAt: (row["superseded_at"] as Int64?).map(Date.init(milliseconds:)))
    }

    static func campaign(_ plain: some LedgerRow) throws -> Campaign {
        let row = RecordRow(plain)
        guard let kind = ActionKind(rawValue: row["action"]), let state = Campaign.State(rawValue: row["state"]) else {
            throw HeraldError(.notFound, "campaign \(row["id"] as Int64) has an unknown action or state")
        }
        return Campaign(
            id: row["id"], name: row["name"], kind: kind, state: state,
            settings: try JSONDecoder().decode(ActionCodeSettings.self, from: Data((row["settings"] as String).utf8)), rate: row["rate"],
            startAt: Date(milliseconds: row["start_at"]), linkLifetime: row["link_lifetime"], rejected: row["rejected"],
            createdAt: Date(milliseconds: row["created_at"]), prunedAt: (row["pruned_at"] as Int64?).map(Date.init(milliseconds:)))
    }

    static func message(_ row: some LedgerRow) throws -> OutboxMessage {
        var cache = MessageDecoding()
        return try message(row, cache: &cache)
    }

    /// Decoded `settings` and `variables` texts, reused across the rows of one claim (a bulk send or a campaign
    /// repeats them), and the columns' positions (a lookup by name compares every column name case-insensitively);
    /// addresses and locales were validated before they were stored and are taken as they are.
    struct MessageDecoding {
        var settings: [String: ActionCodeSettings] = [:]
        var variables: [String: [String: String]] = [:]
        var columns: [String: Int] = [:]
    }

    static func message(_ plain: some LedgerRow, cache: inout MessageDecoding) throws -> OutboxMessage {
        if cache.columns.isEmpty { cache.columns = plain.columnPositions() }
        let row = RecordRow(plain, positions: cache.columns)
        guard let kind = ActionKind(rawValue: row["action"]), let state = OutboxState(rawValue: row["state"]) else {
            throw HeraldError(.notFound, "outbox row \(row["id"] as Int64) has an unknown action or state")
        }
        let settingsText: String = row["settings"]
        let settings: ActionCodeSettings
        if let known = cache.settings[settingsText] {
            settings = known
        } else {
            settings = try JSONDecoder().decode(ActionCodeSettings.self, from: Data(settingsText.utf8))
            if cache.settings.count < 64 { cache.settings[settingsText] = settings }
        }
        var variables: [String: String] = [:]
        if let text = row["variables"] as String?, text != "{}" {
            if let known = cache.variables[text] {
                variables = known
            } else {
                variables = try JSONDecoder().decode([String: String].self, from: Data(text.utf8))
                if cache.variables.count < 64 { cache.variables[text] = variables }
            }
        }
        return OutboxMessage(
            id: row["id"], kind: kind, recipient: EmailAddress(stored: row["recipient"]), email: EmailAddress(stored: row["email"]),
            newEmail: (row["new_email"] as String?).map { EmailAddress(stored: $0) }, locale: LocaleTag(stored: row["locale"]),
            displayName: row["display_name"], settings: settings,
            messageID: row["message_id"], priority: row["priority"], state: state, attempts: row["attempts"],
            queuedAt: Date(milliseconds: row["queued_at"]), nextAttemptAt: Date(milliseconds: row["next_attempt_at"]),
            leaseUntil: (row["lease_until"] as Int64?).map(Date.init(milliseconds:)), lastReplyCode: row["last_reply_code"],
            lastReply: row["last_reply"], sentAt: (row["sent_at"] as Int64?).map(Date.init(milliseconds:)),
            updatedAt: Date(milliseconds: row["updated_at"]), campaignID: row["campaign_id"], variables: variables,
            linkLifetime: row["link_lifetime"], possiblyDelivered: row["possibly_delivered"])
    }
}
