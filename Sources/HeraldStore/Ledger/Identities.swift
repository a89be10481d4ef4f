import Foundation
import HeraldCore

extension LedgerEngine {
    public func signIn(with identity: FederatedIdentity, linking: String?, trusted: Bool, visitor: Visitor, now: Date) throws
        -> IdpOutcome
    {
        // The whole decision runs again, from fresh reads, if the transaction loses a race (no side effects here).
        try writeDurably { db in
            let holderUID = try db.value(
                "SELECT uid FROM federated_identities WHERE provider_id = ? AND raw_id = ?", [identity.providerId, identity.rawId],
                as: String.self)
            let holder = try holderUID.flatMap { try Self.account(db, uid: $0) }
            let linked = try linking.map { try AccountKeyRules.present(try Self.account(db, uid: $0)) }
            let byEmail = try identity.email.flatMap { try Self.account(db, email: $0) }
            let decision = try IdpDecision.decide(identity, holder: holder, linking: linked, byEmail: byEmail, trusted: trusted)
            // Each decision names an account the lookups above found; `decide` never names another.
            let candidates = [holder, linked, byEmail].compactMap { $0 }
            func found(_ uid: String) throws -> Account {
                try AccountKeyRules.present(candidates.first { $0.uid == uid })
            }
            var account: Account
            switch decision {
            case .signIn(let uid):
                account = try found(uid)
                try Self.refresh(db, identity, uid: uid)
            case .create:
                account = Account.created(from: identity, now: now)
                try Self.insert(db, account)
                try Self.insertIdentity(db, identity, uid: account.uid, now: now)
            case .link(let uid), .adopt(let uid), .takeOver(let uid):
                account = try found(uid)
                switch decision {
                case .takeOver:
                    account.takeOver(by: identity, now: now)
                    // Another user of the same provider linked while the address was unproven goes too.
                    try db.execute(
                        "DELETE FROM federated_identities WHERE uid = ? AND provider_id = ? AND raw_id <> ?",
                        [uid, identity.providerId, identity.rawId])
                case .adopt: account.adopt(identity, now: now)
                default: account.link(identity, now: now)
                }
                try Self.update(db, account, now: now)
                try Self.insertIdentity(db, identity, uid: account.uid, now: now)
            case .needConfirmation(let uid):
                account = try found(uid)
            }
            let outcome = IdpOutcome(decision: decision, account: account)
            try db.execute(
                "INSERT INTO account_events (uid, kind, provider_id, at, ip, user_agent, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    account.uid, outcome.eventKind, identity.providerId, now.milliseconds, visitor.ip,
                    visitor.userAgent.map { String($0.prefix(512)) }, identity.rawId,
                ])
            return outcome
        }
    }

    public func identities(uid: String) throws -> [FederatedIdentity] {
        try read { db in
            // Ties ordered bytewise, as SQLite's BINARY collation orders them.
            try db.fetchAll(
                "SELECT * FROM federated_identities WHERE uid = ? ORDER BY linked_at, provider_id\(db.dialect.bytewise)", [uid]
            ).map(Records.identity)
        }
    }

    public func identities(provider: String, limit: Int) throws -> [FederatedIdentity] {
        try read { db in
            try db.fetchAll(
                "SELECT * FROM federated_identities WHERE provider_id = ? ORDER BY linked_at DESC, raw_id\(db.dialect.bytewise) LIMIT ?",
                [provider, limit]
            ).map(Records.identity)
        }
    }

    static func insertIdentity(_ db: Session, _ identity: FederatedIdentity, uid: String, now: Date) throws {
        // `signIn` looked the identity up first and found it unlinked; on PostgreSQL another transaction may have
        // linked it since this one's snapshot, and the transaction runs again (the lookup then finds it).
        try db.keyChecked(constraint: "federated_identities_pkey") {
            try db.executeCached(
                """
                INSERT INTO federated_identities (provider_id, raw_id, uid, email, email_verified, display_name, photo_url,
                                                  screen_name, linked_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    identity.providerId, identity.rawId, uid, identity.email, identity.emailVerified, identity.displayName,
                    identity.photoURL, identity.screenName, now.milliseconds,
                ])
        }
    }

    /// What the provider says of its user now (a new name, photo or address) replaces what was kept.
    static func refresh(_ db: Session, _ identity: FederatedIdentity, uid: String) throws {
        try db.execute(
            """
            UPDATE federated_identities SET email = ?, email_verified = ?, display_name = ?, photo_url = ?, screen_name = ?
            WHERE provider_id = ? AND raw_id = ? AND uid = ?
            """,
            [
                identity.email, identity.emailVerified, identity.displayName, identity.photoURL, identity.screenName,
                identity.providerId, identity.rawId, uid,
            ])
    }
}
