import Foundation
import HeraldCore

/// Counts of what happened, kept by triggers in the transaction that makes it happen (migration v30), so the console's
/// overview, the campaigns' live rates and their reports read a bounded number of rows at any size of the ledger.
///
/// One table, `rollups`, keyed by family, campaign (0: none), bucket and label:
///
/// | family | campaign | bucket | label | counts |
/// |---|---|---|---|---|
/// | `attempts` | 0 | minute | outcome and reply class (`sent 2xx`) | delivery attempts |
/// | `links` | 0 | minute | kind (`click`, `redeemed`, `rejected`) | link events |
/// | `sent` | campaign | second | | the campaign's messages sent |
/// | `replies` | campaign | 0 | last reply code, `none` | the campaign's attempted messages by their last reply |
/// | `clicked` | campaign | 0 | | the campaign's messages clicked at least once |
/// | `redeemed` | campaign | second | | the campaign's messages at their first redemption |
/// | `delays` | campaign | milliseconds, 3 significant digits | | send to first redemption |
/// | `feedback` | campaign | 0 | kind and status class (`hard 5.1`, `soft `) | the campaign's messages by their latest bounce, and by their latest complaint |
/// | `webhooks` | 0 | 0 | state and endpoint (`queued crm`) | webhook deliveries the ledger holds |
///
/// The per-minute families serve windows of the last day and are pruned after `minuteRetention`; the campaign
/// families are a campaign's history and stay. SQLite's triggers update the rows in place; PostgreSQL's append to
/// `rollup_deltas` (as the outbox tallies do) and `foldTallies` folds them.
enum LedgerRollups {
    enum Family: String {
        case attempts, links, sent, replies, clicked, redeemed, delays, feedback, webhooks, pruned
    }

    /// How long the per-minute rows are kept: the overview's longest window, and a day to spare.
    static let minuteRetention: TimeInterval = 2 * 86_400

    /// `expression` (milliseconds) rounded down to three significant digits, up to 115 days; coarser beyond.
    static func delayBucket(_ expression: String) -> String {
        var cases = "CASE WHEN (\(expression)) < 1000 THEN (\(expression))"
        var bound: Int64 = 1000
        var unit: Int64 = 10
        while bound < 10_000_000_000 {
            cases += " WHEN (\(expression)) < \(bound * 10) THEN (\(expression)) / \(unit) * \(unit)"
            bound *= 10
            unit *= 10
        }
        return cases + " ELSE (\(expression)) / \(unit) * \(unit) END"
    }

    static func attemptLabel(_ row: String) -> String {
        "\(row).outcome || ' ' || CASE WHEN \(row).reply_code IS NULL THEN 'connection' ELSE CAST(\(row).reply_code / 100 AS TEXT) || 'xx' END"
    }

    /// The rollups made from the rows a ledger holds: the migration's backfill, and again after `herald migrate --from`
    /// copied a SQLite ledger's rows (copied rows do not pass the triggers that update).
    static func backfill(_ dialect: SQLDialect) -> [String] { backfill + [feedbackBackfill(dialect)] }

    /// A campaign's feedback as its report counts it: per message, its latest bounce (a hard one before any soft) and
    /// its latest complaint, by kind and status class.
    static func feedbackBackfill(_ dialect: SQLDialect) -> String {
        """
        INSERT INTO rollups (family, campaign, bucket, label, n)
        SELECT 'feedback', campaign, 0, kind || ' ' || COALESCE(class, ''), COUNT(*) FROM (
            SELECT o.campaign_id AS campaign, f.kind, \(dialect.statusClass("f.status")) AS class,
                ROW_NUMBER() OVER (PARTITION BY f.outbox_id, f.kind = 'complaint' ORDER BY f.kind = 'hard' DESC, f.id DESC) AS latest
            FROM mail_feedback f JOIN outbox o ON o.id = f.outbox_id WHERE o.campaign_id IS NOT NULL AND f.kind <> 'unsubscribe') AS feedback
        WHERE latest = 1 GROUP BY 2, 4
        """
    }

    /// The feedback of the message `NEW.outbox_id` that `NEW` would follow in its report: the latest of its other
    /// bounces (a hard one first) or complaints.
    static func earlierFeedback(_ columns: String, into variable: String? = nil) -> String {
        """
        SELECT \(columns)\(variable.map { " INTO \($0)" } ?? "") FROM mail_feedback WHERE outbox_id = NEW.outbox_id AND (kind = 'complaint') = (NEW.kind = 'complaint')
            AND kind <> 'unsubscribe' AND id <> NEW.id ORDER BY kind = 'hard' DESC, id DESC LIMIT 1
        """
    }

    private static let backfill = [
        """
        INSERT INTO rollups (family, campaign, bucket, label, n)
        SELECT 'attempts', 0, a.finished_at / 60000, \(attemptLabel("a")), COUNT(*) FROM delivery_attempts a
        WHERE a.finished_at >= (SELECT MAX(finished_at) FROM delivery_attempts) - 172800000 GROUP BY 3, 4
        """,
        """
        INSERT INTO rollups (family, campaign, bucket, label, n)
        SELECT 'links', 0, at / 60000, kind, COUNT(*) FROM link_events
        WHERE at >= (SELECT MAX(at) FROM link_events) - 172800000 GROUP BY 3, 4
        """,
        """
        INSERT INTO rollups (family, campaign, bucket, label, n)
        SELECT 'sent', campaign_id, sent_at / 1000, '', COUNT(*) FROM outbox
        WHERE campaign_id IS NOT NULL AND sent_at IS NOT NULL GROUP BY 2, 3
        """,
        """
        INSERT INTO rollups (family, campaign, bucket, label, n)
        SELECT 'replies', campaign_id, 0, COALESCE(CAST(last_reply_code AS TEXT), 'none'), COUNT(*) FROM outbox
        WHERE campaign_id IS NOT NULL AND attempts > 0 GROUP BY 2, 4
        """,
        """
        INSERT INTO rollups (family, campaign, bucket, label, n)
        SELECT 'clicked', o.campaign_id, 0, '', COUNT(DISTINCT o.id) FROM link_events e JOIN action_codes c ON c.id = e.code_id
        JOIN outbox o ON o.id = c.outbox_id WHERE e.kind = 'click' AND o.campaign_id IS NOT NULL GROUP BY 2
        """,
        """
        INSERT INTO rollups (family, campaign, bucket, label, n)
        SELECT 'redeemed', campaign, first / 1000, '', COUNT(*) FROM (
            SELECT o.campaign_id AS campaign, MIN(c.redeemed_at) AS first FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
            WHERE o.campaign_id IS NOT NULL AND c.redeemed_at IS NOT NULL GROUP BY o.id, o.campaign_id) AS r
        GROUP BY 2, 3
        """,
        """
        INSERT INTO rollups (family, campaign, bucket, label, n)
        SELECT 'delays', campaign, \(delayBucket("delay")), '', COUNT(*) FROM (
            SELECT o.campaign_id AS campaign, MIN(c.redeemed_at) - o.sent_at AS delay FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
            WHERE o.campaign_id IS NOT NULL AND c.redeemed_at IS NOT NULL AND o.sent_at IS NOT NULL GROUP BY o.id, o.campaign_id, o.sent_at) AS r
        GROUP BY 2, 3
        """,
        """
        INSERT INTO rollups (family, campaign, bucket, label, n)
        SELECT 'webhooks', 0, 0, state || ' ' || endpoint, COUNT(*) FROM webhook_deliveries GROUP BY 4
        """,
    ]

    /// The webhooks' summary beside its counts (`webhookSummaries`): each endpoint's oldest waiting delivery, last
    /// delivery and last error, each one step into an index.
    static let webhookIndexes = [
        "CREATE INDEX webhook_deliveries_waiting ON webhook_deliveries(endpoint, created_at) WHERE state = 'queued'",
        "CREATE INDEX webhook_deliveries_delivered ON webhook_deliveries(endpoint, delivered_at) WHERE delivered_at IS NOT NULL",
        "CREATE INDEX webhook_deliveries_failing ON webhook_deliveries(endpoint, last_attempt_at) WHERE last_error IS NOT NULL",
    ]

    /// Whether no other code of the message `outbox` was redeemed before (`code` is being redeemed now).
    static func firstRedemption(outbox: String, code: String) -> String {
        "NOT EXISTS (SELECT 1 FROM action_codes other WHERE other.outbox_id = \(outbox) AND other.redeemed_at IS NOT NULL AND other.id <> \(code))"
    }

    /// Whether no click on a code of the message `outbox` came before the event `event`.
    static func firstClick(outbox: String, event: String) -> String {
        """
        NOT EXISTS (SELECT 1 FROM action_codes other JOIN link_events earlier ON earlier.code_id = other.id
                    WHERE other.outbox_id = \(outbox) AND earlier.kind = 'click' AND earlier.id < \(event))
        """
    }

    static let migration = LedgerMigration(
        "v30: rollups",
        sqlite: [
            """
            CREATE TABLE rollups (
                family TEXT NOT NULL, campaign INTEGER NOT NULL, bucket INTEGER NOT NULL, label TEXT NOT NULL, n INTEGER NOT NULL,
                PRIMARY KEY (family, campaign, bucket, label)) WITHOUT ROWID
            """,
            // One campaign's tallies (its progress, report and `watch`) without reading every campaign's.
            "CREATE INDEX outbox_tallies_campaign ON outbox_tallies(campaign)",
        ] + webhookIndexes + backfill(.sqlite) + [
            """
            CREATE TRIGGER feedback_rollups AFTER INSERT ON mail_feedback WHEN NEW.kind <> 'unsubscribe' BEGIN
                UPDATE rollups SET n = n - 1
                WHERE family = 'feedback' AND campaign = (SELECT campaign_id FROM outbox WHERE id = NEW.outbox_id) AND bucket = 0
                    AND label = (\(earlierFeedback("kind || ' ' || COALESCE(\(SQLDialect.sqlite.statusClass("status")), '')")))
                    AND (NEW.kind = 'hard' OR (\(earlierFeedback("kind"))) <> 'hard');
                INSERT INTO rollups (family, campaign, bucket, label, n)
                SELECT 'feedback', campaign_id, 0, NEW.kind || ' ' || COALESCE(\(SQLDialect.sqlite.statusClass("NEW.status")), ''), 1
                FROM outbox WHERE id = NEW.outbox_id AND campaign_id IS NOT NULL
                    AND (NEW.kind = 'hard' OR COALESCE((\(earlierFeedback("kind"))), '') <> 'hard')
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
            END
            """,
            """
            CREATE TRIGGER attempt_rollups AFTER INSERT ON delivery_attempts BEGIN
                INSERT INTO rollups (family, campaign, bucket, label, n)
                VALUES ('attempts', 0, NEW.finished_at / 60000, \(attemptLabel("NEW")), 1)
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
                INSERT INTO rollups (family, campaign, bucket, label, n)
                SELECT 'sent', campaign_id, NEW.finished_at / 1000, '', 1 FROM outbox
                WHERE NEW.outcome = 'sent' AND id = NEW.outbox_id AND campaign_id IS NOT NULL
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
            END
            """,
            """
            CREATE TRIGGER link_rollups AFTER INSERT ON link_events BEGIN
                INSERT INTO rollups (family, campaign, bucket, label, n) VALUES ('links', 0, NEW.at / 60000, NEW.kind, 1)
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
                INSERT INTO rollups (family, campaign, bucket, label, n)
                SELECT 'clicked', o.campaign_id, 0, '', 1 FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
                WHERE NEW.kind = 'click' AND c.id = NEW.code_id AND o.campaign_id IS NOT NULL AND \(firstClick(outbox: "o.id", event: "NEW.id"))
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
            END
            """,
            """
            CREATE TRIGGER redemption_rollups AFTER UPDATE OF redeemed_at ON action_codes
            WHEN OLD.redeemed_at IS NULL AND NEW.redeemed_at IS NOT NULL AND NEW.outbox_id IS NOT NULL BEGIN
                INSERT INTO rollups (family, campaign, bucket, label, n)
                SELECT 'redeemed', campaign_id, NEW.redeemed_at / 1000, '', 1 FROM outbox
                WHERE id = NEW.outbox_id AND campaign_id IS NOT NULL AND \(firstRedemption(outbox: "NEW.outbox_id", code: "NEW.id"))
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
                INSERT INTO rollups (family, campaign, bucket, label, n)
                SELECT 'delays', campaign_id, \(delayBucket("NEW.redeemed_at - sent_at")), '', 1 FROM outbox
                WHERE id = NEW.outbox_id AND campaign_id IS NOT NULL AND sent_at IS NOT NULL
                    AND \(firstRedemption(outbox: "NEW.outbox_id", code: "NEW.id"))
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
            END
            """,
            """
            CREATE TRIGGER webhook_rollup_insert AFTER INSERT ON webhook_deliveries BEGIN
                INSERT INTO rollups (family, campaign, bucket, label, n) VALUES ('webhooks', 0, 0, NEW.state || ' ' || NEW.endpoint, 1)
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
            END
            """,
            """
            CREATE TRIGGER webhook_rollup_update AFTER UPDATE OF state, endpoint ON webhook_deliveries
            WHEN OLD.state IS NOT NEW.state OR OLD.endpoint IS NOT NEW.endpoint BEGIN
                UPDATE rollups SET n = n - 1 WHERE family = 'webhooks' AND campaign = 0 AND bucket = 0 AND label = OLD.state || ' ' || OLD.endpoint;
                INSERT INTO rollups (family, campaign, bucket, label, n) VALUES ('webhooks', 0, 0, NEW.state || ' ' || NEW.endpoint, 1)
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
            END
            """,
            """
            CREATE TRIGGER webhook_rollup_delete AFTER DELETE ON webhook_deliveries BEGIN
                UPDATE rollups SET n = n - 1 WHERE family = 'webhooks' AND campaign = 0 AND bucket = 0 AND label = OLD.state || ' ' || OLD.endpoint;
            END
            """,
            """
            CREATE TRIGGER outbox_reply_rollups AFTER UPDATE OF last_reply_code, attempts, campaign_id ON outbox
            WHEN (OLD.campaign_id IS NOT NULL OR NEW.campaign_id IS NOT NULL) AND (OLD.attempts > 0 OR NEW.attempts > 0)
                AND (OLD.last_reply_code IS NOT NEW.last_reply_code OR (OLD.attempts > 0) <> (NEW.attempts > 0)
                     OR OLD.campaign_id IS NOT NEW.campaign_id) BEGIN
                UPDATE rollups SET n = n - 1
                WHERE OLD.attempts > 0 AND family = 'replies' AND campaign = OLD.campaign_id AND bucket = 0
                    AND label = COALESCE(CAST(OLD.last_reply_code AS TEXT), 'none');
                INSERT INTO rollups (family, campaign, bucket, label, n)
                SELECT 'replies', NEW.campaign_id, 0, COALESCE(CAST(NEW.last_reply_code AS TEXT), 'none'), 1
                WHERE NEW.attempts > 0 AND NEW.campaign_id IS NOT NULL
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = n + 1;
            END
            """,
        ],
        postgres: [
            """
            CREATE TABLE rollups (
                family TEXT NOT NULL, campaign BIGINT NOT NULL, bucket BIGINT NOT NULL, label TEXT NOT NULL, n BIGINT NOT NULL,
                PRIMARY KEY (family, campaign, bucket, label))
            """,
            """
            CREATE TABLE rollup_deltas (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, family TEXT NOT NULL, campaign BIGINT NOT NULL,
                bucket BIGINT NOT NULL, label TEXT NOT NULL, n BIGINT NOT NULL)
            """,
            "CREATE INDEX outbox_tallies_campaign ON outbox_tallies(campaign)",
        ] + webhookIndexes + backfill(.postgres) + [
            """
            CREATE FUNCTION feedback_rollups() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
                target BIGINT;
                earlier RECORD;
            BEGIN
                SELECT campaign_id INTO target FROM outbox WHERE id = NEW.outbox_id;
                IF target IS NULL OR NEW.kind = 'unsubscribe' THEN RETURN NULL; END IF;
                \(earlierFeedback("kind, \(SQLDialect.postgres.statusClass("status")) AS class", into: "earlier"));
                IF FOUND AND earlier.kind = 'hard' AND NEW.kind <> 'hard' THEN RETURN NULL; END IF;
                IF FOUND THEN
                    INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                    VALUES ('feedback', target, 0, earlier.kind || ' ' || COALESCE(earlier.class, ''), -1);
                END IF;
                INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                VALUES ('feedback', target, 0, NEW.kind || ' ' || COALESCE(\(SQLDialect.postgres.statusClass("NEW.status")), ''), 1);
                RETURN NULL;
            END $$
            """,
            "CREATE TRIGGER feedback_rollups AFTER INSERT ON mail_feedback FOR EACH ROW EXECUTE FUNCTION feedback_rollups()",
            """
            CREATE FUNCTION attempt_rollups() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                SELECT 'attempts', 0, a.finished_at / 60000, \(attemptLabel("a")), COUNT(*) FROM attempt_new a GROUP BY 3, 4;
                INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                SELECT 'sent', o.campaign_id, a.finished_at / 1000, '', COUNT(*) FROM attempt_new a JOIN outbox o ON o.id = a.outbox_id
                WHERE a.outcome = 'sent' AND o.campaign_id IS NOT NULL GROUP BY 2, 3;
                RETURN NULL;
            END $$
            """,
            """
            CREATE TRIGGER attempt_rollups AFTER INSERT ON delivery_attempts REFERENCING NEW TABLE AS attempt_new
            FOR EACH STATEMENT EXECUTE FUNCTION attempt_rollups()
            """,
            """
            CREATE FUNCTION link_rollups() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                INSERT INTO rollup_deltas (family, campaign, bucket, label, n) VALUES ('links', 0, NEW.at / 60000, NEW.kind, 1);
                IF NEW.kind = 'click' THEN
                    INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                    SELECT 'clicked', o.campaign_id, 0, '', 1 FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
                    WHERE c.id = NEW.code_id AND o.campaign_id IS NOT NULL AND \(firstClick(outbox: "o.id", event: "NEW.id"));
                END IF;
                RETURN NULL;
            END $$
            """,
            "CREATE TRIGGER link_rollups AFTER INSERT ON link_events FOR EACH ROW EXECUTE FUNCTION link_rollups()",
            """
            CREATE FUNCTION redemption_rollups() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                SELECT 'redeemed', campaign_id, NEW.redeemed_at / 1000, '', 1 FROM outbox
                WHERE id = NEW.outbox_id AND campaign_id IS NOT NULL AND \(firstRedemption(outbox: "NEW.outbox_id", code: "NEW.id"))
                UNION ALL
                SELECT 'delays', campaign_id, \(delayBucket("NEW.redeemed_at - sent_at")), '', 1 FROM outbox
                WHERE id = NEW.outbox_id AND campaign_id IS NOT NULL AND sent_at IS NOT NULL
                    AND \(firstRedemption(outbox: "NEW.outbox_id", code: "NEW.id"));
                RETURN NULL;
            END $$
            """,
            """
            CREATE TRIGGER redemption_rollups AFTER UPDATE OF redeemed_at ON action_codes FOR EACH ROW
            WHEN (OLD.redeemed_at IS NULL AND NEW.redeemed_at IS NOT NULL AND NEW.outbox_id IS NOT NULL)
            EXECUTE FUNCTION redemption_rollups()
            """,
            """
            CREATE FUNCTION webhook_rollups() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                IF TG_OP = 'INSERT' THEN
                    INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                    SELECT 'webhooks', 0, 0, state || ' ' || endpoint, COUNT(*) FROM webhook_new GROUP BY 4;
                ELSIF TG_OP = 'DELETE' THEN
                    INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                    SELECT 'webhooks', 0, 0, state || ' ' || endpoint, -COUNT(*) FROM webhook_old GROUP BY 4;
                ELSE
                    INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                    SELECT 'webhooks', 0, 0, label, SUM(n) FROM (
                        SELECT state || ' ' || endpoint AS label, -1 AS n FROM webhook_old
                        UNION ALL SELECT state || ' ' || endpoint, 1 FROM webhook_new) AS changes
                    GROUP BY 4 HAVING SUM(n) <> 0;
                END IF;
                RETURN NULL;
            END $$
            """,
            """
            CREATE TRIGGER webhook_rollup_insert AFTER INSERT ON webhook_deliveries REFERENCING NEW TABLE AS webhook_new
            FOR EACH STATEMENT EXECUTE FUNCTION webhook_rollups()
            """,
            """
            CREATE TRIGGER webhook_rollup_update AFTER UPDATE ON webhook_deliveries
            REFERENCING OLD TABLE AS webhook_old NEW TABLE AS webhook_new FOR EACH STATEMENT EXECUTE FUNCTION webhook_rollups()
            """,
            """
            CREATE TRIGGER webhook_rollup_delete AFTER DELETE ON webhook_deliveries REFERENCING OLD TABLE AS webhook_old
            FOR EACH STATEMENT EXECUTE FUNCTION webhook_rollups()
            """,
            // The outbox's update trigger (v29) also keeps the campaigns' replies: one trigger for every `UPDATE` of
            // the hottest table, not two.
            """
            CREATE OR REPLACE FUNCTION outbox_tally_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                INSERT INTO outbox_tally_deltas (state, action, campaign, n)
                SELECT state, action, campaign, SUM(n) FROM (
                    SELECT state, action, COALESCE(campaign_id, 0) AS campaign, -1 AS n FROM tally_old
                    UNION ALL SELECT state, action, COALESCE(campaign_id, 0), 1 FROM tally_new) AS changes
                GROUP BY 1, 2, 3 HAVING SUM(n) <> 0;
                INSERT INTO rollup_deltas (family, campaign, bucket, label, n)
                SELECT 'replies', campaign, 0, label, SUM(n) FROM (
                    SELECT campaign_id AS campaign, COALESCE(CAST(last_reply_code AS TEXT), 'none') AS label, -1 AS n FROM tally_old
                    WHERE campaign_id IS NOT NULL AND attempts > 0
                    UNION ALL SELECT campaign_id, COALESCE(CAST(last_reply_code AS TEXT), 'none'), 1 FROM tally_new
                    WHERE campaign_id IS NOT NULL AND attempts > 0) AS changes
                GROUP BY 2, 4 HAVING SUM(n) <> 0;
                RETURN NULL;
            END $$
            """,
        ])
}

/// One row of a rollup family: a bucket, a label and its count.
struct RollupRow {
    var bucket: Int64
    var label: String
    var count: Int

    /// A two-part label (`sent 2xx`, `queued crm`, `soft `) split at its first space; the second part is empty when
    /// the label has none.
    var labelParts: (first: String, second: String) {
        let parts = label.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
    }
}

extension LedgerEngine {
    /// The rows of `family` for `campaign` (0: none) from bucket `from` on, with PostgreSQL's unfolded deltas added;
    /// those at zero are left out.
    static func rollup(_ db: Session, _ family: LedgerRollups.Family, campaign: Int64 = 0, from: Int64 = .min) throws -> [RollupRow] {
        let filter = "WHERE family = :family AND campaign = :campaign AND bucket >= :from"
        let sql =
            switch db.dialect {
            case .sqlite: "SELECT bucket, label, n FROM rollups \(filter)"
            case .postgres:
                """
                SELECT bucket, label, CAST(SUM(n) AS BIGINT) AS n FROM (
                    SELECT bucket, label, n FROM rollups \(filter)
                    UNION ALL SELECT bucket, label, n FROM rollup_deltas \(filter)) AS r
                GROUP BY bucket, label
                """
            }
        return try db.rows(sql, ["family": family.rawValue, "campaign": campaign, "from": from]).compactMap { row in
            let count = row["n"] as Int
            return count == 0 ? nil : RollupRow(bucket: row["bucket"], label: row["label"], count: count)
        }
    }

    public func sendActivity(since: Date, bucketSeconds: TimeInterval) throws -> [SendActivity] {
        let width = Int64(bucketSeconds * 1000)
        let rows = try read { db in try Self.rollup(db, .attempts, from: since.milliseconds / 60_000) }
        var counts: [String: [Int64: Int]] = [:]
        var parts: [String: (first: String, second: String)] = [:]
        for row in rows {
            counts[row.label, default: [:]][row.bucket * 60_000 / width, default: 0] += row.count
            parts[row.label] = row.labelParts
        }
        return counts.flatMap { label, buckets in
            let (outcome, replyClass) = parts[label] ?? (label, "")
            return buckets.map { SendActivity(bucket: Date(milliseconds: $0.key * width), outcome: outcome, replyClass: replyClass, count: $0.value) }
        }
        .sorted { ($0.bucket, $0.outcome, $0.replyClass) < ($1.bucket, $1.outcome, $1.replyClass) }
    }

    public func linkActivity(since: Date, bucketSeconds: TimeInterval) throws -> [LinkActivity] {
        let width = Int64(bucketSeconds * 1000)
        let rows = try read { db in try Self.rollup(db, .links, from: since.milliseconds / 60_000) }
        var counts: [String: [Int64: Int]] = [:]
        for row in rows where row.label == "click" || row.label == "redeemed" {
            counts[row.label, default: [:]][row.bucket * 60_000 / width, default: 0] += row.count
        }
        return counts.flatMap { kind, buckets in
            buckets.map { LinkActivity(bucket: Date(milliseconds: $0.key * width), kind: kind, count: $0.value) }
        }
        .sorted { ($0.bucket, $0.kind) < ($1.bucket, $1.kind) }
    }

    /// Messages sent per campaign from `since` on, in whole seconds (the first second counts only when `since` starts
    /// it): one range of the rollups per campaign.
    public func campaignSends(since: Date) throws -> [Int64: Int] {
        let from = (since.milliseconds + 999) / 1000
        return try read { db in
            let sql =
                switch db.dialect {
                case .sqlite:
                    """
                    SELECT r.campaign AS campaign, SUM(r.n) AS n FROM campaigns c
                    JOIN rollups r ON r.family = 'sent' AND r.campaign = c.id AND r.bucket >= :from GROUP BY r.campaign
                    """
                case .postgres:
                    """
                    SELECT campaign, CAST(SUM(n) AS BIGINT) AS n FROM (
                        SELECT r.campaign, r.n FROM campaigns c
                        JOIN rollups r ON r.family = 'sent' AND r.campaign = c.id AND r.bucket >= :from
                        UNION ALL SELECT campaign, n FROM rollup_deltas WHERE family = 'sent' AND bucket >= :from) AS r
                    GROUP BY campaign
                    """
                }
            var sends: [Int64: Int] = [:]
            for row in try db.rows(sql, ["from": from]) where (row["n"] as Int) > 0 {
                sends[row["campaign"] as Int64] = row["n"] as Int
            }
            return sends
        }
    }

    public func pruneRollups(now: Date) throws {
        let before = (now.milliseconds - Int64(LedgerRollups.minuteRetention * 1000)) / 60_000
        try write { db in
            _ = try db.execute(
                "DELETE FROM rollups WHERE family IN ('attempts', 'links') AND campaign = 0 AND bucket < :before", ["before": before])
        }
    }
}
