import Foundation
import HeraldCore

extension OutboxEngine {
    /// Claims up to `policy.limit` due rows for this worker and mints a code for each.
    ///
    /// In one transaction (READ COMMITTED on PostgreSQL): rows whose lease ran out go back to the queue (see
    /// `returnOrphans`), stale queued sign-in/reset mail and mail past `maxQueueLifetime` expires, then one
    /// `UPDATE … RETURNING` statement claims the due rows for `owner` (`<worker id>/<connection>:<bound>`), on
    /// PostgreSQL picking them with `FOR UPDATE SKIP LOCKED` so that workers on other hosts claiming at the same
    /// moment take other rows instead of waiting or taking the same ones, and each claimed row gets a fresh hashed code.
    public func claimBatch(_ policy: ClaimPolicy, owner: String, now: Date, abandoning: [Date]) throws -> ClaimedBatch {
        let at = now.milliseconds
        return try write(.locking) { db in
            for earlier in abandoning {
                // A claim's rows are the owner's rows leased until exactly its time plus the lease.
                let lease = earlier.milliseconds + Int64(policy.lease * 1000)
                let ids = try db.fetchAllCached(
                    "SELECT id FROM outbox WHERE state = 'sending' AND lease_until = ? AND claimed_by = ?", [lease, owner]
                ).map { $0.value(at: 0) as Int64 }
                try giveBackUnstarted(db, ids, at: at)
            }
            try returnOrphans(
                db, where: "lease_until < :now", ["now": at], maxAttempts: policy.maxAttempts,
                reason: "lease expired: the worker stopped before recording a result", at: at)
            try expireStale(db, policy: policy, at: at)
            var taking = ClaimTaking()
            try Self.takeDueRows(
                db, lease: at + Int64(policy.lease * 1000), now: at, due: try Self.dueBy(db, at: at), limit: policy.limit, owner: owner,
                into: &taking)
            for (id, error) in taking.unreadable {
                // A row this version cannot read must not block the queue: fail it, visibly.
                try db.execute(
                    "UPDATE outbox SET state = 'failed', lease_until = NULL, last_reply = ? WHERE id = ?", ["unreadable row: \(error)", id])
            }
            let taken = taking.taken  // before the suppressed are dropped
            var messages = taking.handOver()
            // RETURNING order is unspecified; send in queue order.
            messages.sort { ($0.priority, $0.nextAttemptAt, $0.id) < ($1.priority, $1.nextAttemptAt, $1.id) }
            try Self.dropSuppressed(&messages, db, at: at)
            guard !messages.isEmpty else { return ClaimedBatch(messages: [], taken: taken) }
            let codes = messages.map { _ in ActionCode.generateForLedger() }
            let codeIDs = try Self.insertCodes(db, codes, for: messages, policy: policy, at: at)
            var claimed = messages.indices.map {
                ClaimedMessage(message: messages[$0], code: codes[$0], codeID: codeIDs[$0], claimedAt: now)
            }
            if let minting = policy.typedCodes {
                for index in claimed.indices {
                    guard let (typed, hash) = minting.mint(for: messages[index], codeKey: codes[index].ledgerKey) else { continue }
                    try db.executeCached("UPDATE action_codes SET typed_hash = ? WHERE id = ?", [Data(hash), codeIDs[index]])
                    claimed[index].typedCode = typed
                }
            }
            return ClaimedBatch(messages: claimed, taken: taken)
        }
    }

    /// The time rows must be due by to be claimed: the later of this worker's clock (`at`) and the newest row's
    /// queue time. Mail queued by a process whose clock is ahead of this one's, or before this host's clock stepped
    /// back, is due at once rather than after the difference (as Postfix's queue manager takes new mail whatever
    /// the clock says); only retries wait by the clock. One probe of the primary key.
    static func dueBy(_ db: Session, at: Int64) throws -> Int64 {
        let newest = try db.fetchOneCached("SELECT queued_at FROM outbox ORDER BY id DESC LIMIT 1", [])
        return max(at, newest.map { $0.value(at: 0) as Int64 } ?? at)
    }

    /// When the code of a message claimed at `at` expires (its lifetime starts again once the email is sent).
    static func codeExpiry(_ message: OutboxMessage, policy: ClaimPolicy, from at: Int64) -> Int64 {
        at + Int64((message.linkLifetime ?? policy.lifetime(message.kind)) * 1000)
    }

    /// Cancels the claimed rows whose recipient was suppressed after they were queued (an unsubscribe stops only
    /// campaign rows), so a campaign imported before a bounce or an unsubscribe does not mail the address again.
    /// One probe of an empty list costs the claim nothing else.
    static func dropSuppressed(_ messages: inout [OutboxMessage], _ db: Session, at: Int64) throws {
        guard !messages.isEmpty, let suppression = try suppressionLookup(db, for: messages, at: at) else { return }
        var kept: [OutboxMessage] = []
        kept.reserveCapacity(messages.count)
        for message in messages {
            guard let entry = try suppression(message), suppressionStops(scope: entry.scope, campaignID: message.campaignID) else {
                kept.append(message)
                continue
            }
            try db.executeCached(
                """
                UPDATE outbox SET state = 'cancelled', attempts = attempts - 1, lease_until = NULL, claimed_by = NULL,
                    updated_at = ?, last_reply = ?
                WHERE id = ?
                """, [at, "suppressed (\(entry.reason)): not sent", message.id])
        }
        messages = kept
    }

    /// The ids of the rows a claim takes (`:due`, `:limit`), in queue order: due, not of a paused campaign.
    /// Read through the partial index `outbox_due`, which holds them already sorted. On PostgreSQL, rows another
    /// claim has locked are skipped (`SKIP LOCKED`): no two claims ever take the same row, and none waits for another.
    static var dueRows: String {
        """
        SELECT id FROM outbox
        WHERE state IN ('queued','deferred') AND next_attempt_at <= :due
          AND (campaign_id IS NULL OR campaign_id NOT IN (SELECT id FROM campaigns WHERE state != 'active'))
        ORDER BY priority, next_attempt_at, id
        LIMIT :limit
        """ + dialect.skippingLocked
    }

    /// Rows in 'sending' that match `condition`, each owner's in the order it sends them; read through
    /// outbox_leased (every row in 'sending' is in it).
    ///
    /// On PostgreSQL they are locked (`FOR UPDATE`, waiting for a claim or a record that holds one): a second worker
    /// returning the same orphans at the same moment waits, then no longer sees the rows the first one returned (no
    /// longer 'sending', or claimed again with a new lease and owner), so no row is returned twice.
    static func orphanRows(_ condition: String) -> String {
        """
        SELECT id, claimed_by FROM outbox WHERE state = 'sending' AND (\(condition))
        ORDER BY claimed_by, lease_until, priority, next_attempt_at, id
        """ + dialect.forUpdate
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
        _ db: Session, where condition: String, _ arguments: SQLArguments, maxAttempts: Int, reason: String, at: Int64
    ) throws -> (interrupted: Int, returned: Int) {
        let rows = try db.fetchAllCached(Self.orphanRows(condition), arguments)
        var started: [Int64] = []
        var unstarted: [Int64] = []
        var owner: String?? = .none
        var rank = 0
        for row in rows {
            let claimedBy: String? = row.value(named: "claimed_by")
            if owner != .some(claimedBy) {
                owner = .some(claimedBy)
                rank = 0
            }
            rank += 1
            let id: Int64 = row.value(named: "id")
            if rank <= ClaimOwner.unrecorded(claimedBy) { started.append(id) } else { unstarted.append(id) }
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
            // Only a row the statement made `dead` is an event (`state:` guards the insert); a requeued one is not.
            try emitWebhook(db, .dead, outboxID: id, at: at, state: OutboxState.dead.rawValue)
        }
        try giveBackUnstarted(db, unstarted, at: at)
        return (started.count, unstarted.count)
    }

    /// Rows claimed and never started go back as they were: their attempt given back, their code voided.
    func giveBackUnstarted(_ db: Session, _ unstarted: [Int64], at: Int64) throws {
        // A thousand at a time, in two statements (their order changes nothing).
        for start in stride(from: 0, to: unstarted.count, by: 1000) {
            let ids = Array(unstarted[start..<min(start + 1000, unstarted.count)])
            let rows = db.dialect.oneOf("id", ids)
            try db.execute(
                """
                UPDATE outbox SET state = CASE WHEN attempts > 1 THEN 'deferred' ELSE 'queued' END, attempts = attempts - 1,
                    lease_until = NULL, claimed_by = NULL, updated_at = ?
                WHERE \(rows.sql)
                """, SQLArguments([.int(at)]) + rows.arguments)
            let codes = db.dialect.oneOf("outbox_id", ids)
            try db.execute(
                """
                UPDATE action_codes SET expires_at = \(db.dialect.least("expires_at", "created_at"))
                WHERE id IN (SELECT MAX(id) FROM action_codes WHERE \(codes.sql) GROUP BY outbox_id) AND redeemed_at IS NULL
                """, codes.arguments)
        }
    }

    /// Queued sign-in and reset mail past its allowed wait is expired, never sent stale; any mail
    /// past `maxQueueLifetime` since it first became due is expired too (rows of paused campaigns wait).
    ///
    /// On PostgreSQL, rows another transaction holds (a concurrent claim's, which was not stale when it took them)
    /// are skipped rather than waited for.
    private func expireStale(_ db: Session, policy: ClaimPolicy, at: Int64) throws {
        // With an endpoint listening, the expired rows' ids come back for their events; without, nothing is read.
        let listening = webhooks.listens(to: .expired)
        let returning = listening ? " RETURNING id" : ""
        var expired: [Int64] = []
        func expire(_ sql: String, _ arguments: SQLArguments) throws {
            if listening {
                expired += try db.fetchAllCached(sql, arguments).map { $0.value(at: 0) as Int64 }
            } else {
                try db.executeCached(sql, arguments)
            }
        }
        for (kind, wait) in policy.maxQueueWait {
            let waited = "state IN ('queued','deferred') AND action = :action AND queued_at < :cutoff AND campaign_id IS NULL"
            try expire(
                """
                UPDATE outbox SET state = 'expired', updated_at = :now,
                    last_reply = 'expired: queued longer than worker.maxQueueWait'
                WHERE \(db.dialect.unlockedOutboxRows(waited))
                """ + returning, ["now": at, "action": kind.rawValue, "cutoff": at - Int64(wait * 1000)])
        }
        let outlived = """
            state IN ('queued','deferred') AND due_at < :cutoff
              AND (campaign_id IS NULL OR campaign_id NOT IN (SELECT id FROM campaigns WHERE state != 'active'))
            """
        try expire(
            """
            UPDATE outbox SET state = 'expired', updated_at = :now,
                last_reply = 'expired: undelivered for longer than worker.maxQueueLifetime'
                    || COALESCE(' (last reply: ' || last_reply || ')', '')
            WHERE \(db.dialect.unlockedOutboxRows(outlived))
            """ + returning, ["now": at, "cutoff": at - Int64(policy.maxQueueLifetime * 1000)])
        for id in expired { try emitWebhook(db, .expired, outboxID: id, at: at) }
    }

    /// Returns rows this worker claimed but did not send (graceful shutdown) to the queue at once.
    public func release(_ claimed: [ClaimedMessage], now: Date) throws {
        guard !claimed.isEmpty else { return }
        let at = now.milliseconds
        // Each update is conditional on this claim still holding the row; nothing else is read (READ COMMITTED).
        try write(.locking) { db in
            for item in claimed { try Self.giveBack(db, item, next: at, reply: nil, at: at) }
        }
    }

    /// Gives a claimed row its attempt back: it returns to the queue due at `next`, its code voided,
    /// only while this claim still holds it (same lease). With a reply, the row shows it as its last.
    static func giveBack(_ db: Session, _ claimed: ClaimedMessage, next: Int64, reply: (code: Int?, text: String)?, at: Int64) throws {
        try db.executeCached(
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
        try db.executeCached("UPDATE action_codes SET expires_at = created_at WHERE id = ?", [claimed.codeID])
    }
}

/// The rows one claim took, decoded as they are read, and those this version cannot read.
struct ClaimTaking {
    private(set) var messages: [OutboxMessage] = []
    private(set) var unreadable: [(id: Int64, error: any Error)] = []
    private var decoding = Records.MessageDecoding()

    /// How many rows the claim took.
    var taken: Int { messages.count + unreadable.count }

    mutating func reserveCapacity(_ count: Int) { messages.reserveCapacity(count) }

    /// The decoded messages, handed over whole (the caller sorts them in place, no copy).
    mutating func handOver() -> [OutboxMessage] {
        let taken = messages
        messages = []
        return taken
    }

    /// Decodes one claimed row (where the engine holds it: no copy of every column).
    mutating func take(_ row: some LedgerRow) {
        do {
            messages.append(try Records.message(row, cache: &decoding))
        } catch {
            unreadable.append((id: row.value(named: "id"), error: error))
        }
    }
}

extension SQLDialect {
    /// Appended to the select of the rows a claim takes: PostgreSQL skips those another claim has locked, SQLite's
    /// single writer has none.
    fileprivate var skippingLocked: String {
        switch self {
        case .sqlite: ""
        case .postgres: "\nFOR UPDATE SKIP LOCKED"
        }
    }

    /// The outbox rows matching `condition` that no other transaction holds (PostgreSQL skips locked rows; SQLite's
    /// single writer reads `condition` itself).
    fileprivate func unlockedOutboxRows(_ condition: String) -> String {
        switch self {
        case .sqlite: condition
        case .postgres: "id IN (\n    SELECT id FROM outbox\n    WHERE \(condition)\n    FOR UPDATE SKIP LOCKED)"
        }
    }
}
