import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// Claims up to `policy.limit` due rows for this worker and mints a code for each.
    ///
    /// In one transaction: rows whose lease ran out go back to the queue (see `returnOrphans`),
    /// stale queued sign-in/reset mail and mail past `maxQueueLifetime` expires, then one
    /// `UPDATE … RETURNING` statement claims the due rows for `owner` (`<worker id>/<connection>:<bound>`),
    /// and each claimed row gets a fresh hashed code.
    public func claimBatch(_ policy: ClaimPolicy, owner: String, now: Date) throws -> ClaimedBatch {
        let at = now.milliseconds
        return try pool.write { db in
            try returnOrphans(
                db, where: "lease_until < :now", ["now": at], maxAttempts: policy.maxAttempts,
                reason: "lease expired: the worker stopped before recording a result", at: at)
            try expireStale(db, policy: policy, at: at)
            // Rows are read through a cursor, each decoded where SQLite holds it (no copy of every column), and all
            // of them before anything else runs.
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: Self.claimDueRows),
                arguments: ["lease": at + Int64(policy.lease * 1000), "now": at, "limit": policy.limit, "owner": owner])
            var messages: [OutboxMessage] = []
            var unreadable: [(id: Int64, error: any Error)] = []
            var decoding = Records.MessageDecoding()
            while let row = try rows.next() {
                do {
                    messages.append(try Records.message(row, cache: &decoding))
                } catch {
                    unreadable.append((row["id"], error))
                }
            }
            for (id, error) in unreadable {
                // A row this version cannot read must not block the queue: fail it, visibly.
                try db.execute(
                    sql: "UPDATE outbox SET state = 'failed', lease_until = NULL, last_reply = ? WHERE id = ?",
                    arguments: ["unreadable row: \(error)", id])
            }
            let taken = messages.count + unreadable.count  // before the suppressed are dropped
            // RETURNING order is unspecified; send in queue order.
            messages.sort { ($0.priority, $0.nextAttemptAt, $0.id) < ($1.priority, $1.nextAttemptAt, $1.id) }
            try dropSuppressed(&messages, db, at: at)
            let codes = messages.map { _ in ActionCode.generateForLedger() }
            let codeIDs = try Self.codes.run(db, count: messages.count) { statement, row, first in
                let message = messages[row]
                statement.bind(first, codes[row].ledgerKey)
                statement.bind(first + 1, message.id)
                statement.bind(first + 2, message.kind.rawValue)
                statement.bind(first + 3, message.email.value)
                statement.bind(first + 4, message.newEmail?.value)
                statement.bind(first + 5, message.settings.url)
                statement.bind(first + 6, at)
                statement.bind(first + 7, at + Int64((message.linkLifetime ?? policy.lifetime(message.kind)) * 1000))
            }
            let claimed = messages.indices.map {
                ClaimedMessage(message: messages[$0], code: codes[$0], codeID: codeIDs[$0], claimedAt: now)
            }
            return ClaimedBatch(messages: claimed, taken: taken)
        }
    }

    private static let codes = MultiRowInsert(
        "INSERT INTO action_codes (code_hash, outbox_id, action, email, new_email, continue_url, created_at, expires_at) VALUES ",
        columns: 8)

    /// Cancels the claimed rows whose recipient was suppressed after they were queued (an unsubscribe stops only
    /// campaign rows), so a campaign imported before a bounce or an unsubscribe does not mail the address again.
    /// One probe of an empty list costs the claim nothing else.
    private func dropSuppressed(_ messages: inout [OutboxMessage], _ db: Database, at: Int64) throws {
        guard !messages.isEmpty, try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM suppressions)")) == true
        else { return }
        let lookup = try db.cachedStatement(sql: "SELECT reason, scope FROM suppressions WHERE email = ? AND \(Self.inEffect)")
        let cancel = try db.cachedStatement(
            sql: """
                UPDATE outbox SET state = 'cancelled', attempts = attempts - 1, lease_until = NULL, claimed_by = NULL,
                    updated_at = ?, last_reply = ?
                WHERE id = ?
                """)
        var kept: [OutboxMessage] = []
        kept.reserveCapacity(messages.count)
        for message in messages {
            guard let row = try Row.fetchOne(lookup, arguments: [message.recipient.value, at]),
                (row["scope"] as String) == Suppression.Scope.all.rawValue || message.campaignID != nil
            else {
                kept.append(message)
                continue
            }
            try cancel.execute(arguments: [at, "suppressed (\(row["reason"] as String)): not sent", message.id])
        }
        messages = kept
    }

    /// Claims the due rows (`dueRows`) for `:owner` until `:lease` and returns them.
    static let claimDueRows = """
        UPDATE outbox
        SET state = 'sending', attempts = attempts + 1, lease_until = :lease, claimed_by = :owner, updated_at = :now
        WHERE id IN (\(dueRows))
        RETURNING *
        """

    /// The ids of the rows a claim takes (`:now`, `:limit`), in queue order: due, not of a paused campaign.
    /// Read through the partial index `outbox_due`, which holds them already sorted.
    static let dueRows = """
        SELECT id FROM outbox
        WHERE state IN ('queued','deferred') AND next_attempt_at <= :now
          AND (campaign_id IS NULL OR campaign_id NOT IN (SELECT id FROM campaigns WHERE state != 'active'))
        ORDER BY priority, next_attempt_at, id
        LIMIT :limit
        """

    /// Rows in 'sending' that match `condition`, each owner's in the order it sends them; read through
    /// outbox_leased (every row in 'sending' is in it).
    static func orphanRows(_ condition: String) -> String {
        """
        SELECT id, claimed_by FROM outbox WHERE state = 'sending' AND (\(condition))
        ORDER BY claimed_by, lease_until, priority, next_attempt_at, id
        """
    }

    /// Returns rows left in `sending` by a worker that is gone (those matching `condition`).
    ///
    /// Each connection sends its rows in claim order and leaves at most its owner's bound unrecorded
    /// (`ClaimPolicy.unrecordedPerConnection`, named in the owner: `ClaimOwner`), so only that many first rows of
    /// each connection may have been started: they get an `interrupted` attempt and go back to the queue (or die when out of
    /// attempts). The others were never started: they go back with their attempt given back and
    /// their code voided, as a graceful stop would have left them.
    @discardableResult
    func returnOrphans(
        _ db: Database, where condition: String, _ arguments: StatementArguments, maxAttempts: Int, reason: String, at: Int64
    ) throws -> (interrupted: Int, returned: Int) {
        let rows = try Row.fetchAll(db.cachedStatement(sql: Self.orphanRows(condition)), arguments: arguments)
        var started: [Int64] = []
        var unstarted: [Int64] = []
        var owner: String?? = .none
        var rank = 0
        for row in rows {
            let claimedBy: String? = row["claimed_by"]
            if owner != .some(claimedBy) {
                owner = .some(claimedBy)
                rank = 0
            }
            rank += 1
            if rank <= ClaimOwner.unrecorded(claimedBy) { started.append(row["id"]) } else { unstarted.append(row["id"]) }
        }
        let interrupt = """
                INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome, reply_text)
                SELECT id, attempts, updated_at, :now, 'interrupted', :reason FROM outbox WHERE id = :id;
                UPDATE outbox
                SET state = CASE WHEN attempts >= :max THEN 'dead' ELSE 'queued' END, lease_until = NULL, claimed_by = NULL,
                    next_attempt_at = :now, updated_at = :now, last_reply = :reason
                WHERE id = :id
            """
        for id in started {
            try db.execute(sql: interrupt, arguments: ["id": id, "now": at, "reason": reason, "max": maxAttempts])
            // Only a row the statement made `dead` is an event (`state:` guards the insert); a requeued one is not.
            try emitWebhook(db, .dead, outboxID: id, at: at, state: OutboxState.dead.rawValue)
        }
        let giveBack = """
                UPDATE outbox SET state = CASE WHEN attempts > 1 THEN 'deferred' ELSE 'queued' END, attempts = attempts - 1,
                    lease_until = NULL, claimed_by = NULL, updated_at = :now
                WHERE id = :id;
                UPDATE action_codes SET expires_at = MIN(expires_at, created_at)
                WHERE id = (SELECT MAX(id) FROM action_codes WHERE outbox_id = :id) AND redeemed_at IS NULL
            """
        for id in unstarted {
            try db.execute(sql: giveBack, arguments: ["id": id, "now": at])
        }
        return (started.count, unstarted.count)
    }

    /// Queued sign-in and reset mail past its allowed wait is expired, never sent stale; any mail
    /// past `maxQueueLifetime` since it first became due is expired too (rows of paused campaigns wait).
    private func expireStale(_ db: Database, policy: ClaimPolicy, at: Int64) throws {
        // With an endpoint listening, the expired rows' ids come back for their events; without, nothing is read.
        let listening = webhooks.listens(to: .expired)
        let returning = listening ? " RETURNING id" : ""
        var expired: [Int64] = []
        for (kind, wait) in policy.maxQueueWait {
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE outbox SET state = 'expired', updated_at = :now,
                        last_reply = 'expired: queued longer than worker.maxQueueWait'
                    WHERE state IN ('queued','deferred') AND action = :action AND queued_at < :cutoff AND campaign_id IS NULL
                    """ + returning)
            let arguments: StatementArguments = ["now": at, "action": kind.rawValue, "cutoff": at - Int64(wait * 1000)]
            if listening { expired += try Int64.fetchAll(statement, arguments: arguments) } else { try statement.execute(arguments: arguments) }
        }
        let statement = try db.cachedStatement(
            sql: """
                UPDATE outbox SET state = 'expired', updated_at = :now,
                    last_reply = 'expired: undelivered for longer than worker.maxQueueLifetime'
                        || COALESCE(' (last reply: ' || last_reply || ')', '')
                WHERE state IN ('queued','deferred') AND due_at < :cutoff
                  AND (campaign_id IS NULL OR campaign_id NOT IN (SELECT id FROM campaigns WHERE state != 'active'))
                """ + returning)
        let arguments: StatementArguments = ["now": at, "cutoff": at - Int64(policy.maxQueueLifetime * 1000)]
        if listening { expired += try Int64.fetchAll(statement, arguments: arguments) } else { try statement.execute(arguments: arguments) }
        for id in expired { try emitWebhook(db, .expired, outboxID: id, at: at) }
    }

    /// Returns rows this worker claimed but did not send (graceful shutdown) to the queue at once.
    public func release(_ claimed: [ClaimedMessage], now: Date) throws {
        guard !claimed.isEmpty else { return }
        let at = now.milliseconds
        try pool.write { db in
            for item in claimed { try Self.giveBack(db, item, next: at, reply: nil, at: at) }
        }
    }

    /// Gives a claimed row its attempt back: it returns to the queue due at `next`, its code voided,
    /// only while this claim still holds it (same lease). With a reply, the row shows it as its last.
    static func giveBack(_ db: Database, _ claimed: ClaimedMessage, next: Int64, reply: (code: Int?, text: String)?, at: Int64) throws {
        try db.cachedStatement(
            sql: """
                UPDATE outbox SET state = CASE WHEN attempts > 1 THEN 'deferred' ELSE 'queued' END, attempts = attempts - 1,
                    lease_until = NULL, claimed_by = NULL, updated_at = :at, next_attempt_at = :next,
                    last_reply_code = CASE WHEN :replied THEN :code ELSE last_reply_code END,
                    last_reply = CASE WHEN :replied THEN :reply ELSE last_reply END
                WHERE id = :id AND state = 'sending' AND lease_until = :lease
                """
        ).execute(arguments: [
            "at": at, "next": next, "replied": reply != nil, "code": reply?.code, "reply": reply?.text, "id": claimed.message.id,
            "lease": claimed.message.leaseUntil?.milliseconds,
        ])
        try db.cachedStatement(sql: "UPDATE action_codes SET expires_at = created_at WHERE id = ?").execute(arguments: [claimed.codeID])
    }
}
