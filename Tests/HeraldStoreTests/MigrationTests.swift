import Foundation
import GRDB
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// Upgrades of a ledger with rows in it.
@Suite struct MigrationTests {
    let scratch = ScratchDirectory()

    @Test func v13RebuildsTheOutboxKeepingEveryRowItsReferencesAndTheIDSequence() throws {
        let path = scratch.path("v12.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            let v12 = "v12: campaign rows skip the indexes only single sends need; lookups by email use an index"
            try SQLiteMigrations.migrator.migrate(queue, upTo: v12)
            try queue.write { db in
                for id in 1...3 {
                    try db.execute(
                        sql: """
                            INSERT INTO outbox (id, action, recipient, email, locale, settings, message_id, state, queued_at, next_attempt_at,
                                updated_at) VALUES (?, 'verify-email', ?, ?, 'en', '{}', ?, 'sent', 1, 1, 1)
                            """, arguments: [id, "u\(id)@example.com", "u\(id)@example.com", "<m\(id)@x>"])
                    try db.execute(
                        sql: """
                            INSERT INTO action_codes (code_hash, outbox_id, action, email, created_at, expires_at)
                            VALUES (?, ?, 'verify-email', ?, 1, 2)
                            """, arguments: [Data([UInt8(id)]), id, "u\(id)@example.com"])
                    try db.execute(
                        sql: "INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome) VALUES (?, 1, 1, 1, 'sent')",
                        arguments: [id])
                }
                // The newest row is gone: the next id must still be 4, as AUTOINCREMENT promises.
                try db.execute(sql: "DELETE FROM delivery_attempts WHERE outbox_id = 3; DELETE FROM action_codes WHERE outbox_id = 3")
                try db.execute(sql: "DELETE FROM outbox WHERE id = 3")
            }
        }
        let store = try SQLiteStore(path: path)
        try store.read { db in
            #expect(try Int64.fetchAll(db, sql: "SELECT id FROM outbox ORDER BY id") == [1, 2])
            #expect(try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") == 3)
            #expect(try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").isEmpty)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM action_codes c JOIN outbox o ON o.id = c.outbox_id") == 2)
            let indexes = try String.fetchAll(db, sql: "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'outbox'")
            #expect(Set(indexes).isSuperset(of: ["outbox_due", "outbox_leased", "outbox_campaign_recipient", "outbox_recipient_key"]))
            #expect(!indexes.contains { $0.hasPrefix("sqlite_autoindex_outbox") }, "message_id is no longer indexed")
        }
        let id = try store.enqueue(
            ActionRequest(kind: .verifyEmail, email: "new@example.com", links: HeraldConfiguration.Links()), messageDomain: "x.test")
        #expect(id == 4)
        let outcome = try store.recordFeedback(
            MailFeedback(outboxID: 1, kind: .hard, status: "5.1.1", diagnostic: "gone"), softLimit: 3, softWindow: 60, now: Date())
        #expect(outcome?.state == .bounced, "the rebuilt table takes the new states")
    }

    @Test func v18RebuildsTheOutboxAndTheAttemptsForPossiblyDeliveredMail() throws {
        let path = scratch.path("v17.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteMigrations.migrator.migrate(queue, upTo: "v17: a code's family is found through its outbox row")
            try queue.write { db in
                for id in 1...3 {
                    try db.execute(
                        sql: """
                            INSERT INTO outbox (id, action, recipient, email, locale, settings, message_id, state, attempts, queued_at,
                                next_attempt_at, updated_at, first_queued_at) VALUES (?, 'verify-email', ?, ?, 'en', '{}', ?, 'deferred', 2, 1, 1, 1, 7)
                            """, arguments: [id, "u\(id)@example.com", "u\(id)@example.com", "<m\(id)@x>"])
                    try db.execute(
                        sql: """
                            INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome, reply_text)
                            VALUES (?, 1, 1, 1, 'connection', 'refused'), (?, 2, 1, 1, 'deferred', '451 later')
                            """, arguments: [id, id])
                }
                try db.execute(sql: "DELETE FROM delivery_attempts WHERE outbox_id = 3; DELETE FROM outbox WHERE id = 3")
            }
        }
        let store = try SQLiteStore(path: path)
        try store.read { db in
            #expect(try Int64.fetchAll(db, sql: "SELECT id FROM outbox ORDER BY id") == [1, 2])
            #expect(try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") == 3)
            #expect(try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").isEmpty)
            for row in try Row.fetchAll(db, sql: "SELECT state, attempts, first_queued_at, possibly_delivered FROM outbox") {
                let kept: (String, Int, Int, Int) = (row["state"], row["attempts"], row["first_queued_at"], row["possibly_delivered"])
                #expect(kept == ("deferred", 2, 7, 0), "every column kept, and no possibly delivered attempt yet")
            }
            #expect(
                try String.fetchAll(db, sql: "SELECT outcome FROM delivery_attempts ORDER BY id") == [
                    "connection", "deferred", "connection", "deferred",
                ])
            let indexes = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name IN ('outbox', 'delivery_attempts')")
            #expect(Set(indexes).isSuperset(of: ["outbox_due", "outbox_leased", "outbox_waiting", "outbox_email", "delivery_attempts_outbox"]))
        }
        try store.write { db in
            try db.execute(sql: "UPDATE outbox SET state = 'possibly-delivered', possibly_delivered = 1 WHERE id = 1")
            try db.execute(
                sql: "INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome) VALUES (1, 3, 2, 2, 'possibly-delivered')")
        }
        let states = try store.read { db in try String.fetchAll(db, sql: "SELECT state FROM outbox ORDER BY id") }
        #expect(states == ["possibly-delivered", "deferred"], "the rebuilt tables take the new state and outcome")
    }
}
