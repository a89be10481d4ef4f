import Foundation
import HeraldCore

/// Decoding PostgreSQL ledger rows into the records of `HeraldCore`, and back into statement arguments.
enum PostgresRecords {
    static func account(_ row: SQLRow) -> Account {
        Account(
            uid: row["uid"], email: row["email"], emailVerified: row["email_verified"], passwordHash: row["password_hash"],
            displayName: row["display_name"], disabled: row["disabled"], emailLinkSignin: row["email_link_signin"],
            validSince: row["valid_since"], createdAt: Date(milliseconds: row["created_at"]),
            lastLoginAt: (row["last_login_at"] as Int64?).map(Date.init(milliseconds:)),
            providers: (try? JSONDecoder().decode([String].self, from: Data((row["providers"] as String).utf8))) ?? [],
            photoURL: row["photo_url"], initialEmail: row["initial_email"])
    }

    static func arguments(_ account: Account) -> SQLArguments {
        let providerJSON = String(decoding: (try? JSONEncoder().encode(account.providers)) ?? Data("[]".utf8), as: UTF8.self)
        return [
            "uid": account.uid, "email": account.email, "email_verified": account.emailVerified, "password_hash": account.passwordHash,
            "display_name": account.displayName, "disabled": account.disabled, "email_link_signin": account.emailLinkSignin,
            "photo_url": account.photoURL, "initial_email": account.initialEmail,
            "valid_since": account.validSince, "created_at": account.createdAt.milliseconds,
            "last_login_at": account.lastLoginAt?.milliseconds, "providers": providerJSON,
        ]
    }

    /// A code row; `campaign_id` is read when the query joined the outbox.
    static func code(_ row: SQLRow) -> CodeRecord? {
        guard let kind = ActionKind(rawValue: row["action"]) else { return nil }
        return CodeRecord(
            id: row["id"], kind: kind, email: row["email"], newEmail: row["new_email"], outboxID: row["outbox_id"],
            continueURL: row["continue_url"], campaignID: row.hasColumn("campaign_id") ? row["campaign_id"] : nil,
            createdAt: Date(milliseconds: row["created_at"]), expiresAt: Date(milliseconds: row["expires_at"]),
            redeemedAt: (row["redeemed_at"] as Int64?).map(Date.init(milliseconds:)),
            supersededAt: (row["superseded_at"] as Int64?).map(Date.init(milliseconds:)))
    }

    static func campaign(_ row: SQLRow) throws -> Campaign {
        guard let kind = ActionKind(rawValue: row["action"]), let state = Campaign.State(rawValue: row["state"]) else {
            throw HeraldError(.notFound, "campaign \(row["id"] as Int64) has an unknown action or state")
        }
        return Campaign(
            id: row["id"], name: row["name"], kind: kind, state: state,
            settings: try JSONDecoder().decode(ActionCodeSettings.self, from: Data((row["settings"] as String).utf8)), rate: row["rate"],
            startAt: Date(milliseconds: row["start_at"]), linkLifetime: row["link_lifetime"], rejected: row["rejected"],
            createdAt: Date(milliseconds: row["created_at"]))
    }

    static func message(_ row: SQLRow) throws -> OutboxMessage {
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

    /// A row read by column position, the positions found once per statement.
    struct IndexedRow {
        let row: SQLRow
        let columns: [String: Int]

        @_disfavoredOverload
        subscript<Value: SQLDecodable>(_ name: String) -> Value {
            if let index = columns[name] { return row[index] }
            return row[name]
        }

        subscript<Value: SQLDecodable>(_ name: String) -> Value? {
            if let index = columns[name] { return row[index] }
            return row[name]
        }
    }

    static func message(_ plain: SQLRow, cache: inout MessageDecoding) throws -> OutboxMessage {
        if cache.columns.isEmpty {
            for (index, name) in plain.columnNames.enumerated() where cache.columns[name] == nil { cache.columns[name] = index }
        }
        let row = IndexedRow(row: plain, columns: cache.columns)
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
            linkLifetime: row["link_lifetime"])
    }
}
