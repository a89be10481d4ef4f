import Foundation
import HeraldCore

extension PostgresStore {
    /// Claims up to `policy.limit` due rows for this worker and mints a code for each.
    ///
    /// In one READ COMMITTED transaction: rows whose lease ran out go back to the queue (see `returnOrphans`),
    /// stale queued sign-in/reset mail and mail past `maxQueueLifetime` expires, then one
    /// `UPDATE … RETURNING` statement claims the due rows for `owner` (`<worker id>/<connection>:<bound>`),
    /// picking them with `FOR UPDATE SKIP LOCKED` so that workers on other hosts claiming at the same moment take
    /// other rows instead of waiting or taking the same ones, and each claimed row gets a fresh hashed code.
    public func claimBatch(_ policy: ClaimPolicy, owner: String, now: Date) throws -> ClaimedBatch {
        let at = now.milliseconds
        return try pool.write(.readCommitted) { db in
            try returnOrphans(
                db, where: "lease_until < :now", ["now": at], maxAttempts: policy.maxAttempts,
                reason: "lease expired: the worker stopped before recording a result", at: at)
            try expireStale(db, policy: policy, at: at)
            let rows = try db.fetchAll(
                Self.claimDueRows,
                ["lease": at + Int64(policy.lease * 1000), "now": at, "limit": policy.limit, "owner": owner])
            var messages: [OutboxMessage] = []
            messages.reserveCapacity(rows.count)
            var unreadable: [(id: Int64, error: any Error)] = []
            var decoding = Records.MessageDecoding()
            for row in rows {
                do {
                    messages.append(try Records.message(row, cache: &decoding))
                } catch {
                    unreadable.append((id: row["id"] as Int64, error: error))
                }
            }
            for (id, error) in unreadable {
                // A row this version cannot read must not block the queue: fail it, visibly.
                try db.execute(
                    "UPDATE outbox SET state = 'failed', lease_until = NULL, last_reply = ? WHERE id = ?",
                    ["unreadable row: \(error)", id])
            }
            // RETURNING order is unspecified; send in queue order.
            messages.sort { ($0.priority, $0.nextAttemptAt, $0.id) < ($1.priority, $1.nextAttemptAt, $1.id) }
            try dropSuppressed(&messages, db, at: at)
            guard !messages.isEmpty else { return ClaimedBatch(messages: [], taken: rows.count) }
            // Every code in one statement, in queue order; the ids come back keyed by their row.
            var codes: [ActionCode] = []
            var hashes: [String] = []
            var outboxIDs: [Int64] = []
            var actions: [String] = []
            var emails: [String] = []
            var newEmails: [String] = []
            var hasNewEmail: [Int64] = []
            var urls: [String] = []
            var hasURL: [Int64] = []
            var expiries: [Int64] = []
            for message in messages {
                let code = ActionCode.generateForLedger()
                codes.append(code)
                hashes.append(claimHexadecimal(code.ledgerKey))
                outboxIDs.append(message.id)
                actions.append(message.kind.rawValue)
                emails.append(message.email.value)
                newEmails.append(message.newEmail?.value ?? "")
                hasNewEmail.append(message.newEmail == nil ? 0 : 1)
                urls.append(message.settings.url ?? "")
                hasURL.append(message.settings.url == nil ? 0 : 1)
                expiries.append(at + Int64((message.linkLifetime ?? policy.lifetime(message.kind)) * 1000))
            }
            let inserted = try db.fetchAll(
                """
                INSERT INTO action_codes (code_hash, outbox_id, action, email, new_email, continue_url, created_at, expires_at)
                SELECT decode(u.code_hash, 'hex'), u.outbox_id, u.action, u.email,
                       CASE WHEN u.has_new_email <> 0 THEN u.new_email END, CASE WHEN u.has_url <> 0 THEN u.url END,
                       ?10::bigint, u.expires_at
                FROM unnest(?1::text[], ?2::bigint[], ?3::text[], ?4::text[], ?5::text[], ?6::bigint[], ?7::text[], ?8::bigint[],
                            ?9::bigint[])
                     WITH ORDINALITY AS u(code_hash, outbox_id, action, email, new_email, has_new_email, url, has_url, expires_at, ord)
                ORDER BY u.ord
                RETURNING id, outbox_id
                """,
                [hashes, outboxIDs, actions, emails, newEmails, hasNewEmail, urls, hasURL, expiries, at])
            let codeIDs = Dictionary(
                inserted.map { ($0["outbox_id"] as Int64, $0["id"] as Int64) }, uniquingKeysWith: { first, _ in first })
            var claimed: [ClaimedMessage] = []
            claimed.reserveCapacity(messages.count)
            for (message, code) in zip(messages, codes) {
                guard let codeID = codeIDs[message.id] else {
                    throw HeraldError(.unavailable, "ledger unavailable: no code was stored for outbox row \(message.id)")
                }
                claimed.append(ClaimedMessage(message: message, code: code, codeID: codeID, claimedAt: now))
            }
            return ClaimedBatch(messages: claimed, taken: rows.count)
        }
    }

    /// Cancels the claimed rows whose recipient was suppressed after they were queued (an unsubscribe stops only
    /// campaign rows), so a campaign imported before a bounce or an unsubscribe does not mail the address again.
    /// One probe of an empty list costs the claim nothing else; otherwise one lookup serves the whole claim.
    func dropSuppressed(_ messages: inout [OutboxMessage], _ db: PostgresSession, at: Int64) throws {
        guard !messages.isEmpty, try db.fetchValue("SELECT EXISTS (SELECT 1 FROM suppressions)", as: Bool.self) == true
        else { return }
        var suppressed: [String: (reason: String, scope: String)] = [:]
        for row in try db.fetchAll(
            "SELECT email, reason, scope FROM suppressions WHERE email = ANY(?) AND \(Self.inEffect)",
            [messages.map(\.recipient.value), at])
        {
            suppressed[row["email"] as String] = (row["reason"] as String, row["scope"] as String)
        }
        guard !suppressed.isEmpty else { return }
        var kept: [OutboxMessage] = []
        kept.reserveCapacity(messages.count)
        for message in messages {
            guard let entry = suppressed[message.recipient.value],
                entry.scope == Suppression.Scope.all.rawValue || message.campaignID != nil
            else {
                kept.append(message)
                continue
            }
            try db.execute(
                """
                UPDATE outbox SET state = 'cancelled', attempts = attempts - 1, lease_until = NULL, claimed_by = NULL,
                    updated_at = ?, last_reply = ?
                WHERE id = ?
                """, [at, "suppressed (\(entry.reason)): not sent", message.id])
        }
        messages = kept
    }

    /// Claims the due rows (`dueRows`) for `:owner` until `:lease` and returns them.
    ///
    /// The ids are chosen once, in a materialized CTE: as `WHERE id IN (SELECT … LIMIT … FOR UPDATE SKIP
    /// LOCKED)` the planner may run the subquery more than once (a semi-join rescanned), and its `LIMIT` then
    /// no longer bounds how many rows the update takes (PostgreSQL bug #15715).
    static let claimDueRows = """
        WITH due AS MATERIALIZED (\(dueRows))
        UPDATE outbox
        SET state = 'sending', attempts = attempts + 1, lease_until = :lease, claimed_by = :owner, updated_at = :now
        FROM due WHERE outbox.id = due.id
        RETURNING outbox.*
        """

    /// The ids of the rows a claim takes (`:now`, `:limit`), in queue order: due, not of a paused campaign.
    /// Read through the partial index `outbox_due`, which holds them already sorted. Rows another claim has
    /// locked are skipped (`SKIP LOCKED`): no two claims ever take the same row, and none waits for another.
    static let dueRows = """
        SELECT id FROM outbox
        WHERE state IN ('queued','deferred') AND next_attempt_at <= :now
          AND (campaign_id IS NULL OR campaign_id NOT IN (SELECT id FROM campaigns WHERE state <> 'active'))
        ORDER BY priority, next_attempt_at, id
        LIMIT :limit
        FOR UPDATE SKIP LOCKED
        """

    /// Rows in 'sending' that match `condition`, each owner's in the order it sends them; read through
    /// outbox_leased (every row in 'sending' is in it).
    ///
    /// They are locked (`FOR UPDATE`, waiting for a claim or a record that holds one): a second worker returning
    /// the same orphans at the same moment waits, then no longer sees the rows the first one returned (no
    /// longer 'sending', or claimed again with a new lease and owner), so no row is returned twice.
    static func orphanRows(_ condition: String) -> String {
        """
        SELECT id, claimed_by FROM outbox WHERE state = 'sending' AND (\(condition))
        ORDER BY claimed_by, lease_until, priority, next_attempt_at, id
        FOR UPDATE
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
        _ db: PostgresSession, where condition: String, _ arguments: SQLArguments, maxAttempts: Int, reason: String, at: Int64
    ) throws -> (interrupted: Int, returned: Int) {
        let rows = try db.fetchAll(Self.orphanRows(condition), arguments)
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
        for id in started {
            try db.execute(
                """
                INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome, reply_text)
                SELECT id, attempts, updated_at, :now, 'interrupted', :reason FROM outbox WHERE id = :id
                """, ["id": id, "now": at, "reason": reason])
            try db.execute(
                """
                UPDATE outbox
                SET state = CASE WHEN attempts >= :max THEN 'dead' ELSE 'queued' END, lease_until = NULL, claimed_by = NULL,
                    next_attempt_at = :now, updated_at = :now, last_reply = :reason
                WHERE id = :id
                """, ["id": id, "now": at, "reason": reason, "max": maxAttempts])
            try emitWebhook(db, .dead, outboxID: id, at: at, state: OutboxState.dead.rawValue)
        }
        if !unstarted.isEmpty {
            // Rows never started: all of them in two statements (their order changes nothing).
            try db.execute(
                """
                UPDATE outbox SET state = CASE WHEN attempts > 1 THEN 'deferred' ELSE 'queued' END, attempts = attempts - 1,
                    lease_until = NULL, claimed_by = NULL, updated_at = :now
                WHERE id = ANY(:ids)
                """, ["ids": unstarted, "now": at])
            try db.execute(
                """
                UPDATE action_codes SET expires_at = LEAST(expires_at, created_at)
                WHERE id IN (SELECT MAX(id) FROM action_codes WHERE outbox_id = ANY(:ids) GROUP BY outbox_id) AND redeemed_at IS NULL
                """, ["ids": unstarted])
        }
        return (started.count, unstarted.count)
    }

    /// Queued sign-in and reset mail past its allowed wait is expired, never sent stale; any mail
    /// past `maxQueueLifetime` since it first became due is expired too (rows of paused campaigns wait).
    ///
    /// Rows another transaction holds (a concurrent claim's, which was not stale when it took them) are skipped
    /// rather than waited for.
    private func expireStale(_ db: PostgresSession, policy: ClaimPolicy, at: Int64) throws {
        // With an endpoint listening, the expired rows' ids come back for their events; without, nothing is read.
        let listening = webhooks.listens(to: .expired)
        let returning = listening ? " RETURNING id" : ""
        var expired: [Int64] = []
        for (kind, wait) in policy.maxQueueWait {
            let sql =
                """
                UPDATE outbox SET state = 'expired', updated_at = :now,
                    last_reply = 'expired: queued longer than worker.maxQueueWait'
                WHERE id IN (
                    SELECT id FROM outbox
                    WHERE state IN ('queued','deferred') AND action = :action AND queued_at < :cutoff AND campaign_id IS NULL
                    FOR UPDATE SKIP LOCKED)
                """ + returning
            let arguments: SQLArguments = ["now": at, "action": kind.rawValue, "cutoff": at - Int64(wait * 1000)]
            if listening { expired += try db.fetchColumn(sql, arguments, as: Int64.self) } else { try db.execute(sql, arguments) }
        }
        let sql =
            """
            UPDATE outbox SET state = 'expired', updated_at = :now,
                last_reply = 'expired: undelivered for longer than worker.maxQueueLifetime'
                    || COALESCE(' (last reply: ' || last_reply || ')', '')
            WHERE id IN (
                SELECT id FROM outbox
                WHERE state IN ('queued','deferred') AND due_at < :cutoff
                  AND (campaign_id IS NULL OR campaign_id NOT IN (SELECT id FROM campaigns WHERE state <> 'active'))
                FOR UPDATE SKIP LOCKED)
            """ + returning
        let arguments: SQLArguments = ["now": at, "cutoff": at - Int64(policy.maxQueueLifetime * 1000)]
        if listening { expired += try db.fetchColumn(sql, arguments, as: Int64.self) } else { try db.execute(sql, arguments) }
        for id in expired { try emitWebhook(db, .expired, outboxID: id, at: at) }
    }

    /// Returns rows this worker claimed but did not send (graceful shutdown) to the queue at once.
    public func release(_ claimed: [ClaimedMessage], now: Date) throws {
        guard !claimed.isEmpty else { return }
        let at = now.milliseconds
        // Each update is conditional on this claim still holding the row; nothing else is read.
        try pool.write(.readCommitted) { db in
            for item in claimed { try Self.giveBack(db, item, next: at, reply: nil, at: at) }
        }
    }

    /// Gives a claimed row its attempt back: it returns to the queue due at `next`, its code voided,
    /// only while this claim still holds it (same lease). With a reply, the row shows it as its last.
    static func giveBack(
        _ db: PostgresSession, _ claimed: ClaimedMessage, next: Int64, reply: (code: Int?, text: String)?, at: Int64
    ) throws {
        try db.execute(
            """
            UPDATE outbox SET state = CASE WHEN attempts > 1 THEN 'deferred' ELSE 'queued' END, attempts = attempts - 1,
                lease_until = NULL, claimed_by = NULL, updated_at = :at, next_attempt_at = :next,
                last_reply_code = CASE WHEN :replied <> 0 THEN CAST(:code AS BIGINT) ELSE last_reply_code END,
                last_reply = CASE WHEN :replied <> 0 THEN CAST(:reply AS TEXT) ELSE last_reply END
            WHERE id = :id AND state = 'sending' AND lease_until = :lease
            """,
            [
                "at": at, "next": next, "replied": reply != nil, "code": reply?.code, "reply": reply?.text, "id": claimed.message.id,
                "lease": claimed.message.leaseUntil?.milliseconds,
            ])
        try db.execute("UPDATE action_codes SET expires_at = created_at WHERE id = ?", [claimed.codeID])
    }
}

/// Lower-case hexadecimal of `bytes`, for a BYTEA sent as text (`decode(…, 'hex')`).
private func claimHexadecimal(_ bytes: [UInt8]) -> String {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: text, as: UTF8.self)
}
