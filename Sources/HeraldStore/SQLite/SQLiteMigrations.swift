import GRDB

/// The ledger's schema. Migrations are append-only: never edit a registered one, add a new one.
enum SQLiteMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: outbox, action codes, delivery attempts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE outbox (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        action TEXT NOT NULL,
                        recipient TEXT NOT NULL,            -- where the mail goes (the new address for a change)
                        email TEXT NOT NULL,                -- the account's email
                        new_email TEXT,
                        locale TEXT NOT NULL,
                        display_name TEXT,
                        settings TEXT NOT NULL,             -- ActionCodeSettings as JSON
                        message_id TEXT NOT NULL UNIQUE,    -- stable across resends
                        priority INTEGER NOT NULL DEFAULT 0, -- lower is sent first
                        state TEXT NOT NULL CHECK (state IN
                            ('queued','sending','sent','deferred','failed','dead','expired','cancelled')),
                        attempts INTEGER NOT NULL DEFAULT 0,
                        queued_at INTEGER NOT NULL,         -- all times: Unix milliseconds, UTC
                        next_attempt_at INTEGER NOT NULL,
                        lease_until INTEGER,
                        last_reply_code INTEGER,
                        last_reply TEXT,
                        sent_at INTEGER,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE INDEX outbox_due ON outbox(priority, next_attempt_at, id) WHERE state IN ('queued','deferred');
                    CREATE INDEX outbox_leased ON outbox(lease_until) WHERE state = 'sending';
                    CREATE INDEX outbox_recipient ON outbox(recipient);
                    CREATE INDEX outbox_state ON outbox(state);

                    CREATE TABLE action_codes (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        code_hash BLOB NOT NULL UNIQUE,     -- SHA-256 of the code; the code itself is never stored
                        outbox_id INTEGER REFERENCES outbox(id),
                        action TEXT NOT NULL,
                        email TEXT NOT NULL,
                        new_email TEXT,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL,        -- moved to sent time + lifetime once the email is sent
                        redeemed_at INTEGER,
                        superseded_at INTEGER
                    );
                    CREATE INDEX action_codes_outbox ON action_codes(outbox_id);
                    CREATE INDEX action_codes_family ON action_codes(email, action);

                    CREATE TABLE delivery_attempts (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        outbox_id INTEGER NOT NULL REFERENCES outbox(id),
                        attempt INTEGER NOT NULL,
                        started_at INTEGER NOT NULL,
                        finished_at INTEGER NOT NULL,
                        outcome TEXT NOT NULL CHECK (outcome IN ('sent','deferred','failed','dead','interrupted')),
                        reply_code INTEGER,
                        reply_text TEXT,
                        next_attempt_at INTEGER
                    );
                    CREATE INDEX delivery_attempts_outbox ON delivery_attempts(outbox_id);
                    """)
        }
        migrator.registerMigration("v2: index for expiring stale queued mail") { db in
            try db.execute(
                sql: """
                    CREATE INDEX outbox_waiting ON outbox(action, queued_at) WHERE state IN ('queued','deferred')
                    """)
        }
        migrator.registerMigration("v3: accounts and link events") { db in
            try db.execute(
                sql: """
                    CREATE TABLE accounts (
                        uid TEXT PRIMARY KEY,
                        email TEXT COLLATE NOCASE UNIQUE,
                        email_verified INTEGER NOT NULL DEFAULT 0,
                        password_hash TEXT,                 -- pbkdf2-sha256$rounds$salt$hash, never the password
                        display_name TEXT,
                        disabled INTEGER NOT NULL DEFAULT 0,
                        email_link_signin INTEGER NOT NULL DEFAULT 0,
                        valid_since INTEGER NOT NULL,       -- Unix milliseconds; ID tokens issued before are rejected
                        created_at INTEGER NOT NULL,        -- Unix milliseconds
                        last_login_at INTEGER,
                        providers TEXT NOT NULL DEFAULT '[]' -- JSON array of provider ids
                    );

                    CREATE TABLE link_events (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        code_id INTEGER REFERENCES action_codes(id),
                        kind TEXT NOT NULL CHECK (kind IN ('click','redeemed','rejected')),
                        at INTEGER NOT NULL,
                        ip TEXT,
                        user_agent TEXT,
                        detail TEXT
                    );
                    CREATE INDEX link_events_code ON link_events(code_id);
                    """)
        }
        migrator.registerMigration("v4: campaigns") { db in
            try db.execute(
                sql: """
                    CREATE TABLE campaigns (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        name TEXT NOT NULL UNIQUE,
                        action TEXT NOT NULL,
                        state TEXT NOT NULL CHECK (state IN ('active','paused','cancelled')),
                        settings TEXT NOT NULL,             -- ActionCodeSettings as JSON
                        rate REAL,                          -- messages per second; NULL = as fast as the worker goes
                        start_at INTEGER NOT NULL,
                        link_lifetime REAL,                 -- seconds; NULL = links.lifetime
                        source TEXT,
                        rejected INTEGER NOT NULL DEFAULT 0,  -- rows the last import rejected
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    ALTER TABLE outbox ADD COLUMN campaign_id INTEGER REFERENCES campaigns(id);
                    ALTER TABLE outbox ADD COLUMN variables TEXT;          -- extra template variables as JSON
                    ALTER TABLE outbox ADD COLUMN link_lifetime REAL;      -- seconds; NULL = links.lifetime
                    ALTER TABLE outbox ADD COLUMN source_line INTEGER;     -- the recipients file line it came from
                    CREATE UNIQUE INDEX outbox_campaign_recipient ON outbox(campaign_id, recipient) WHERE campaign_id IS NOT NULL;
                    CREATE INDEX outbox_campaign_state ON outbox(campaign_id, state) WHERE campaign_id IS NOT NULL;
                    """)
        }
        migrator.registerMigration("v5: codes remember their continue URL") { db in
            try db.execute(sql: "ALTER TABLE action_codes ADD COLUMN continue_url TEXT")
        }
        migrator.registerMigration("v6: refresh tokens, profile photo, initial email") { db in
            try db.execute(
                sql: """
                    CREATE TABLE refresh_tokens (
                        token_hash BLOB PRIMARY KEY,        -- SHA-256 of the token, never the token
                        uid TEXT NOT NULL,
                        provider TEXT NOT NULL,             -- the sign-in provider its ID tokens name
                        issued_at INTEGER NOT NULL,         -- Unix milliseconds: the sign-in; revoked once valid_since passes it
                        revoked TEXT                        -- the error code it answers with (USER_NOT_FOUND after deletion)
                    ) WITHOUT ROWID;
                    CREATE INDEX refresh_tokens_uid ON refresh_tokens(uid);
                    ALTER TABLE accounts ADD COLUMN photo_url TEXT;
                    ALTER TABLE accounts ADD COLUMN initial_email TEXT;
                    """)
        }
        migrator.registerMigration("v7: worker heartbeats, claim owners, queue lifetime, bulk idempotency") { db in
            try db.execute(
                sql: """
                    CREATE TABLE workers (
                        id TEXT PRIMARY KEY,                -- random per worker process
                        host TEXT NOT NULL,                 -- hostname and boot id: where `pid` means something
                        pid INTEGER NOT NULL,
                        started_at INTEGER NOT NULL,
                        heartbeat_at INTEGER NOT NULL,      -- refreshed every few seconds while the worker lives
                        stopped_at INTEGER                  -- set by a clean stop, or when found dead
                    ) WITHOUT ROWID;
                    ALTER TABLE outbox ADD COLUMN claimed_by TEXT;     -- '<worker id>/<connection>' holding the lease
                    ALTER TABLE outbox ADD COLUMN due_at INTEGER;      -- first due; worker.maxQueueLifetime counts from here
                    ALTER TABLE outbox ADD COLUMN bulk_id INTEGER REFERENCES bulk_sends(id);  -- `send --recipients` run
                    UPDATE outbox SET due_at = next_attempt_at WHERE state IN ('queued','deferred','sending') AND attempts = 0;
                    UPDATE outbox SET due_at = queued_at WHERE due_at IS NULL;
                    CREATE INDEX outbox_claimed_by ON outbox(claimed_by) WHERE state = 'sending';
                    CREATE INDEX outbox_due_at ON outbox(due_at) WHERE state IN ('queued','deferred');
                    CREATE TABLE bulk_sends (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        key TEXT NOT NULL UNIQUE,           -- SHA-256 of the action, its options and the address list
                        created_at INTEGER NOT NULL
                    );
                    CREATE UNIQUE INDEX outbox_bulk_recipient ON outbox(bulk_id, recipient) WHERE bulk_id IS NOT NULL;

                    CREATE TABLE delivery_attempts_v7 (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        outbox_id INTEGER NOT NULL REFERENCES outbox(id),
                        attempt INTEGER NOT NULL,
                        started_at INTEGER NOT NULL,
                        finished_at INTEGER NOT NULL,
                        -- 'connection': the server or the connection failed, not the message; no attempt charged
                        outcome TEXT NOT NULL CHECK (outcome IN ('sent','deferred','failed','dead','interrupted','connection')),
                        reply_code INTEGER,
                        reply_text TEXT,
                        next_attempt_at INTEGER
                    );
                    INSERT INTO delivery_attempts_v7 SELECT * FROM delivery_attempts;
                    DROP TABLE delivery_attempts;
                    ALTER TABLE delivery_attempts_v7 RENAME TO delivery_attempts;
                    CREATE INDEX delivery_attempts_outbox ON delivery_attempts(outbox_id);
                    """)
        }
        migrator.registerMigration("v8: abuse limits, suppressed requests, aggregated unknown-code visits") { db in
            try db.execute(
                sql: """
                    -- The per-recipient cooldown and daily cap count this: lower-cased, '+tag' dropped.
                    ALTER TABLE outbox ADD COLUMN recipient_key TEXT;
                    UPDATE outbox SET recipient_key = CASE
                        WHEN instr(substr(recipient, 1, instr(recipient, '@') - 1), '+') > 1
                        THEN substr(recipient, 1, instr(recipient, '+') - 1) || substr(recipient, instr(recipient, '@'))
                        ELSE recipient END
                    WHERE campaign_id IS NULL;
                    CREATE INDEX outbox_recipient_key ON outbox(recipient_key, action, queued_at) WHERE campaign_id IS NULL;
                    -- Requests answered "sent" but not sent (enumeration protection): as durable as a real one.
                    CREATE TABLE suppressed_sends (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        action TEXT NOT NULL,
                        recipient_key TEXT NOT NULL,
                        reason TEXT NOT NULL,               -- what an admin would have been told (EMAIL_NOT_FOUND, EMAIL_EXISTS, …)
                        requested_at INTEGER NOT NULL
                    );
                    CREATE INDEX suppressed_sends_recipient ON suppressed_sends(recipient_key, action, requested_at);
                    CREATE INDEX suppressed_sends_requested ON suppressed_sends(requested_at);
                    -- App-initiated emails per hour, for the project and per account quotas ('' is the project).
                    CREATE TABLE send_counts (
                        scope TEXT NOT NULL CHECK (scope IN ('project','account')),
                        key TEXT NOT NULL,                  -- account uid, or a hash of the address when it has none
                        hour INTEGER NOT NULL,              -- Unix milliseconds / 3,600,000
                        count INTEGER NOT NULL,
                        PRIMARY KEY (scope, key, hour)
                    ) WITHOUT ROWID;
                    -- Refused requests (ip, account, project, recipient) and unknown-code visits, per hour.
                    CREATE TABLE abuse_counts (
                        counter TEXT NOT NULL,
                        key TEXT NOT NULL,                  -- an IPv4 /24 or IPv6 /48, an account uid, an address hash, or ''
                        hour INTEGER NOT NULL,
                        count INTEGER NOT NULL,
                        PRIMARY KEY (counter, key, hour)
                    ) WITHOUT ROWID;
                    CREATE INDEX link_events_at ON link_events(at);
                    """)
        }
        migrator.registerMigration("v9: identity providers linked to accounts, and account events") { db in
            try db.execute(
                sql: """
                    -- One row per provider user linked to an account (Firebase's providerUserInfo).
                    CREATE TABLE federated_identities (
                        provider_id TEXT NOT NULL,
                        raw_id TEXT NOT NULL,
                        uid TEXT NOT NULL REFERENCES accounts(uid) ON DELETE CASCADE,
                        email TEXT,
                        email_verified INTEGER NOT NULL DEFAULT 0,
                        display_name TEXT,
                        photo_url TEXT,
                        screen_name TEXT,
                        linked_at INTEGER NOT NULL,
                        PRIMARY KEY (provider_id, raw_id)
                    );
                    CREATE UNIQUE INDEX federated_identities_uid ON federated_identities(uid, provider_id);
                    -- Provider sign-ins, links, unlinks and needConfirmation answers, for the audit.
                    CREATE TABLE account_events (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        uid TEXT,
                        kind TEXT NOT NULL,
                        provider_id TEXT,
                        at INTEGER NOT NULL,
                        ip TEXT,
                        user_agent TEXT,
                        detail TEXT
                    );
                    CREATE INDEX account_events_at ON account_events(at);
                    CREATE INDEX account_events_uid ON account_events(uid);
                    """)
        }
        migrator.registerMigration("v10: no index on outbox.state") { db in
            // A full index on a column of six values: SQLite's planner preferred it to the partial indexes the claim
            // and the expiry are written for, and sorted every queued row on each claim (7.7 ms per 200 rows at
            // 20,000 queued); it also cost two index writes per state change. Every query it served has a partial
            // index (outbox_due, outbox_leased, outbox_claimed_by, outbox_due_at, outbox_waiting) or is an admin listing.
            try db.execute(sql: "DROP INDEX outbox_state")
        }
        migrator.registerMigration("v11: no index on outbox.claimed_by") { db in
            // Two index writes per message (the claim adds the entry, the record removes it) for a lookup made when
            // a worker is found gone: the rows in 'sending' are few (what workers hold), and outbox_leased lists them.
            try db.execute(sql: "DROP INDEX outbox_claimed_by")
        }
        migrator.registerMigration("v12: campaign rows skip the indexes only single sends need; lookups by email use an index") { db in
            // A campaign import wrote every row into eight b-trees. Campaign rows' expiry goes by due_at
            // (outbox_due_at), not outbox_waiting, and their recipient is their email, so one index on
            // (recipient, campaign_id) both keeps a campaign's recipients unique and finds them by address;
            // outbox_recipient and the new outbox_email cover the other rows. Lookups by address were full
            // scans before: `recipient = ? OR email = ?` had no index for its second half.
            try db.execute(
                sql: """
                    DROP INDEX outbox_waiting;
                    CREATE INDEX outbox_waiting ON outbox(action, queued_at)
                        WHERE state IN ('queued','deferred') AND campaign_id IS NULL;
                    DROP INDEX outbox_recipient;
                    CREATE INDEX outbox_recipient ON outbox(recipient) WHERE campaign_id IS NULL;
                    CREATE INDEX outbox_email ON outbox(email) WHERE campaign_id IS NULL AND email <> recipient;
                    DROP INDEX outbox_campaign_recipient;
                    CREATE UNIQUE INDEX outbox_campaign_recipient ON outbox(recipient, campaign_id) WHERE campaign_id IS NOT NULL;
                    """)
        }
        migrator.registerMigration("v13: bounced and complained rows; the suppression list; bounces, complaints and unsubscribes") {
            db in
            // SQLite cannot widen a CHECK constraint in place: the outbox is rebuilt (same columns, same order, same
            // indexes) with two more states. GRDB runs migrations with foreign keys off and checks them afterwards.
            // message_id loses its UNIQUE index, which nothing looks up by: a Message-ID is unique by construction
            // (a random 64-bit prefix per process and a counter), and the index was an eighth of a campaign import's
            // writes (75 MB for a million rows).
            let sequence = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'")
            try db.execute(
                sql: """
                    CREATE TABLE outbox_rebuilt (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        action TEXT NOT NULL,
                        recipient TEXT NOT NULL,            -- where the mail goes (the new address for a change)
                        email TEXT NOT NULL,                -- the account's email
                        new_email TEXT,
                        locale TEXT NOT NULL,
                        display_name TEXT,
                        settings TEXT NOT NULL,             -- ActionCodeSettings as JSON
                        message_id TEXT NOT NULL,           -- stable across resends; unique by construction
                        priority INTEGER NOT NULL DEFAULT 0, -- lower is sent first
                        state TEXT NOT NULL CHECK (state IN
                            ('queued','sending','sent','deferred','failed','dead','expired','cancelled','bounced','complained')),
                        attempts INTEGER NOT NULL DEFAULT 0,
                        queued_at INTEGER NOT NULL,         -- all times: Unix milliseconds, UTC
                        next_attempt_at INTEGER NOT NULL,
                        lease_until INTEGER,
                        last_reply_code INTEGER,
                        last_reply TEXT,
                        sent_at INTEGER,
                        updated_at INTEGER NOT NULL,
                        campaign_id INTEGER REFERENCES campaigns(id),
                        variables TEXT,
                        link_lifetime REAL,
                        source_line INTEGER,
                        claimed_by TEXT,
                        due_at INTEGER,
                        bulk_id INTEGER REFERENCES bulk_sends(id),
                        recipient_key TEXT
                    );
                    INSERT INTO outbox_rebuilt SELECT * FROM outbox;
                    DROP TABLE outbox;
                    ALTER TABLE outbox_rebuilt RENAME TO outbox;
                    CREATE INDEX outbox_due ON outbox(priority, next_attempt_at, id) WHERE state IN ('queued','deferred');
                    CREATE INDEX outbox_leased ON outbox(lease_until) WHERE state = 'sending';
                    CREATE INDEX outbox_campaign_state ON outbox(campaign_id, state) WHERE campaign_id IS NOT NULL;
                    CREATE INDEX outbox_due_at ON outbox(due_at) WHERE state IN ('queued','deferred');
                    CREATE UNIQUE INDEX outbox_bulk_recipient ON outbox(bulk_id, recipient) WHERE bulk_id IS NOT NULL;
                    CREATE INDEX outbox_recipient_key ON outbox(recipient_key, action, queued_at) WHERE campaign_id IS NULL;
                    CREATE INDEX outbox_waiting ON outbox(action, queued_at)
                        WHERE state IN ('queued','deferred') AND campaign_id IS NULL;
                    CREATE INDEX outbox_recipient ON outbox(recipient) WHERE campaign_id IS NULL;
                    CREATE INDEX outbox_email ON outbox(email) WHERE campaign_id IS NULL AND email <> recipient;
                    CREATE UNIQUE INDEX outbox_campaign_recipient ON outbox(recipient, campaign_id) WHERE campaign_id IS NOT NULL;

                    -- Addresses Herald no longer mails. An unsubscribe stops campaigns ('campaigns'); the rest stop all mail.
                    CREATE TABLE suppressions (
                        email TEXT PRIMARY KEY,             -- lower-cased, as outbox.recipient
                        reason TEXT NOT NULL CHECK (reason IN ('hard-bounce','soft-bounce','complaint','unsubscribe','manual')),
                        scope TEXT NOT NULL CHECK (scope IN ('all','campaigns')),
                        detail TEXT,
                        outbox_id INTEGER,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL,
                        expires_at INTEGER                  -- soft bounces lapse; NULL is for good
                    ) WITHOUT ROWID;

                    -- What came back about sent mail: bounces, complaints, one-click unsubscribes.
                    CREATE TABLE mail_feedback (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        outbox_id INTEGER NOT NULL REFERENCES outbox(id),
                        recipient TEXT NOT NULL,
                        kind TEXT NOT NULL CHECK (kind IN ('hard','soft','complaint','unsubscribe')),
                        status TEXT,                        -- enhanced status code, e.g. 5.1.1
                        diagnostic TEXT,
                        received_at INTEGER NOT NULL
                    );
                    CREATE INDEX mail_feedback_outbox ON mail_feedback(outbox_id);
                    CREATE INDEX mail_feedback_recipient ON mail_feedback(recipient, kind, received_at);
                    """)
            if let sequence {
                try db.execute(sql: "DELETE FROM sqlite_sequence WHERE name = 'outbox'")
                try db.execute(sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('outbox', ?)", arguments: [sequence])
            }
        }
        migrator.registerMigration("v14: operators' retries and cancels") { db in
            try db.execute(
                sql: """
                    -- What an operator did to a row: requeued it with a fresh attempt budget, or cancelled it.
                    CREATE TABLE outbox_events (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        outbox_id INTEGER NOT NULL REFERENCES outbox(id),
                        kind TEXT NOT NULL CHECK (kind IN ('retried','cancelled')),
                        actor TEXT NOT NULL,                -- cli, or admin-api
                        at INTEGER NOT NULL
                    );
                    CREATE INDEX outbox_events_outbox ON outbox_events(outbox_id);
                    """)
        }
        migrator.registerMigration("v15: webhook deliveries") { db in
            try db.execute(
                sql: """
                    -- The webhooks' outbox: one row per event and endpoint, written in the state change's transaction.
                    CREATE TABLE webhook_deliveries (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        event_id TEXT NOT NULL,             -- the same for every endpoint and retry of one event
                        endpoint TEXT NOT NULL,             -- webhooks.<name>
                        event TEXT NOT NULL,                -- sent, failed, dead, bounced, clicked, redeemed, expired
                        outbox_id INTEGER,                  -- the message, when the event is about one
                        payload TEXT NOT NULL,              -- the JSON body as signed and sent
                        created_at INTEGER NOT NULL,
                        state TEXT NOT NULL CHECK (state IN ('queued','delivered','dead')),
                        attempts INTEGER NOT NULL DEFAULT 0,
                        next_attempt_at INTEGER NOT NULL,
                        lease_until INTEGER,                -- a dispatcher holds it until then
                        last_attempt_at INTEGER,
                        delivered_at INTEGER,
                        last_status INTEGER,                -- the endpoint's HTTP status
                        last_error TEXT
                    );
                    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint, next_attempt_at, id) WHERE state = 'queued';
                    CREATE INDEX webhook_deliveries_outbox ON webhook_deliveries(outbox_id);
                    CREATE INDEX webhook_deliveries_created ON webhook_deliveries(created_at);
                    """)
        }
        migrator.registerMigration("v16: a retried row keeps its first queue time") { db in
            // A retry resets queued_at (the queue lifetime counts again); this keeps the original for the history.
            // NULL until the first retry: queued_at is then the first.
            try db.execute(sql: "ALTER TABLE outbox ADD COLUMN first_queued_at INTEGER")
        }
        migrator.registerMigration("v17: a code's family is found through its outbox row") { db in
            // Redemption finds mailed codes of the same email and action through the outbox (`CodeFamily`); only
            // codes minted without a row stay indexed by address.
            try db.execute(
                sql: """
                    DROP INDEX IF EXISTS action_codes_family;
                    CREATE INDEX action_codes_minted_family ON action_codes(email, action) WHERE outbox_id IS NULL;
                    """)
        }
        return migrator
    }
}
