import Foundation
import GRDB
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// What only SQL can see in `SQLiteStore`: the file's journal mode, what a row holds at rest,
/// link events, and rows this version cannot read.
@Suite struct SQLiteStoreTests {
    let scratch = ScratchDirectory()
    let store: SQLiteStore

    init() throws {
        store = try SQLiteStore(path: scratch.path("ledger.sqlite"))
    }

    @Test func ledgerRunsInWALMode() throws {
        #expect(try store.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
    }

    /// A new ledger made for message retention has incremental auto-vacuum: once retention has pruned messages,
    /// `reclaimSpace` gives their pages back to the file system, a step at a time, down to a reserve of a tenth of the
    /// file. Without retention, a new ledger is made as before.
    @Test func aNewLedgerMadeForRetentionGivesThePagesOfPrunedMessagesBackToTheFileSystem() throws {
        #expect(try store.read { db in try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") } == 0, "NONE without retention")
        let path = scratch.path("retained.sqlite")
        let store = try SQLiteStore(path: path, incrementalVacuum: true)
        func size() throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0 }
        func pages() throws -> (free: Int, total: Int, size: Int) {
            try store.read { db in
                (
                    try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0, try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0,
                    try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0
                )
            }
        }
        #expect(try store.read { db in try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") } == 2, "INCREMENTAL")
        let now = Date(milliseconds: Date().milliseconds)
        let campaign = try Fixture.campaign("big", now: now, in: store)
        try Fixture.add((0..<4000).map { "member\($0)@example.com" }, to: campaign, now: now, in: store)
        let policy = Fixture.policy { $0.worker.batchSize = 500 }
        while case let claimed = try store.claim(policy, now: now), !claimed.isEmpty {
            try store.record(claimed.map { ($0, Fixture.sent(at: now)) }, policy: policy)
        }
        #expect(try store.reclaimSpace(pages: 64) == 0, "nothing free yet")
        var after: Int64? = 0
        while let from = after {
            after = try store.pruneMessages(
                before: now.addingTimeInterval(31 * 86_400), after: from, limit: 1000, now: now.addingTimeInterval(60 * 86_400)
            ).next
        }
        #expect(try store.messages().isEmpty)
        try store.checkpoint()
        let full = try size()
        let freed = try pages()
        #expect(freed.free > freed.total / 2, "the pruned rows' pages are free: \(freed)")
        var given: [Int] = []
        while case let step = try store.reclaimSpace(pages: 64), step > 0 { given.append(step) }
        try store.checkpoint()
        let left = try pages()
        #expect(given.count > 1 && given.allSatisfy { $0 <= 64 }, "in steps of at most 64 pages: \(given)")
        #expect(left.free <= left.total / 10 && left.free >= left.total / 10 - 64, "a tenth kept: \(left)")
        #expect(try size() == left.total * left.size && left.total == freed.total - given.reduce(0, +))
        #expect(try size() < full / 2)
    }

    /// A ledger made before keeps its free pages for new rows, even once retention is on: SQLite cannot turn
    /// auto-vacuum on without rewriting the whole file.
    @Test func aLedgerMadeWithoutAutoVacuumKeepsItsFreePages() throws {
        let path = scratch.path("older.sqlite")
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "CREATE TABLE made_before (a)") }
        let older = try SQLiteStore(path: path, incrementalVacuum: true)
        #expect(try older.read { db in try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") } == 0)
        try older.pool.write { db in
            try db.execute(
                sql:
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) INSERT INTO made_before SELECT zeroblob(4000) FROM n"
            )
            try db.execute(sql: "DELETE FROM made_before")
        }
        try older.checkpoint()
        let free = try older.read { db in try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0 }
        #expect(free >= 1000)
        #expect(try older.reclaimSpace(pages: 64) == 0)
        #expect(try older.read { db in try Int.fetchOne(db, sql: "PRAGMA freelist_count") } == free)
    }

    @Test func aGroupCommitRecordsEveryOutcomeOfTheBatchInOneTransaction() throws {
        let policy = Fixture.policy()
        for email in ["a@example.com", "b@example.com", "c@example.com"] {
            _ = try store.enqueue(try Fixture.request(.resetPassword, email), messageDomain: Fixture.messageDomain)
        }
        let claimed = try store.claim(policy)
        #expect(claimed.count == 3)
        var commits = 0
        let counter = CommitCounter { commits += 1 }
        store.pool.base.add(transactionObserver: counter, extent: .databaseLifetime)
        try store.record([(claimed[0], Fixture.sent()), (claimed[1], Fixture.failed()), (claimed[2], Fixture.sent())], policy: policy)
        #expect(commits == 1)
        #expect(try store.stateCounts() == [.sent: 2, .failed: 1])
        #expect(try claimed.map { try store.attempts(outboxID: $0.message.id).count } == [1, 1, 1])
        let status = try store.queueStatus()
        #expect(status.pending == 0 && status.sending == 0 && status.nextDue == nil)
    }

    @Test func theClaimReadsDueRowsThroughTheirPartialIndex() throws {
        let plan = try store.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SQLiteStore.dueRows, arguments: ["due": 0, "limit": 200])
                .map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("outbox_due") } && !plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
    }

    @Test func lookupsByAddressFindEveryKindOfRowThroughAnIndex() throws {
        let plan = try store.read { db in
            try Row.fetchAll(
                db, sql: "EXPLAIN QUERY PLAN SELECT * FROM outbox WHERE " + OutboxConditions.addressed(to: ":email"), arguments: ["email": "a"]
            )
            .map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("MULTI-INDEX OR") } && !plan.contains { $0.hasPrefix("SCAN") }, "\(plan)")
        let campaign = try Fixture.campaign("welcome", in: store)
        _ = try Fixture.add(["ada@example.com", "bob@example.com"], to: campaign, in: store)
        _ = try store.enqueue(Fixture.request(.resetPassword, "ada@example.com"), messageDomain: Fixture.messageDomain)
        _ = try store.enqueue(Fixture.request(.verifyAndChangeEmail, "ada@example.com"), messageDomain: Fixture.messageDomain)
        let ada = try store.messages(state: nil, email: EmailAddress("ada@example.com"), limit: nil)
        #expect(ada.map(\.kind) == [.verifyEmail, .resetPassword, .verifyAndChangeEmail])
        let changed = try store.messages(state: nil, email: EmailAddress("new-ada@example.com"), limit: nil)
        #expect(changed.map(\.kind) == [.verifyAndChangeEmail])
    }

    @Test func aGoneWorkersRowsAreFoundThroughTheLeaseIndex() throws {
        let plan = try store.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SQLiteStore.orphanRows(SQLiteStore.ownedBy), arguments: ["first": "w/", "last": "w0"])
                .map { $0["detail"] as String }
        }
        #expect(
            plan.contains { $0.contains("USING INDEX outbox_leased") } && !plan.contains { $0.hasPrefix("SCAN outbox") && !$0.contains("INDEX") },
            "\(plan)")
        let indexes = try store.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE tbl_name = 'outbox' AND type = 'index'")
        }
        #expect(!indexes.contains("outbox_claimed_by"))
    }

    @Test func onlyTheCodesHashIsStoredAndThePlaintextIsNowhereInTheFiles() throws {
        let policy = Fixture.policy()
        let id = try store.enqueue(Fixture.request(.resetPassword), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(policy)[0]
        try store.record(claimed, Fixture.sent(), policy: policy)
        let minted = try Fixture.mint(.verifyEmail, in: store)
        let hashes = try store.read { db in
            try Row.fetchAll(db, sql: "SELECT outbox_id, code_hash FROM action_codes ORDER BY id")
                .map { (outboxID: $0["outbox_id"] as Int64?, hash: $0["code_hash"] as Data) }
        }
        #expect(hashes.map(\.outboxID) == [id, nil])
        #expect(hashes.map(\.hash) == [Data(claimed.code.ledgerKey), Data(ActionCode.ledgerKey(minted))])
        let files = ["", "-wal", "-shm"].compactMap { FileManager.default.contents(atPath: scratch.path("ledger.sqlite") + $0) }
        #expect(!files.isEmpty)
        for data in files {
            #expect(data.range(of: Data(claimed.code.plaintext.utf8)) == nil)
            #expect(data.range(of: Data(minted.utf8)) == nil)
            for code in [claimed.code.plaintext, minted] {
                let secret = try #require(Base64URL.decode(code)).suffix(32)
                #expect(secret.count == 32)
                #expect(data.range(of: Data(secret)) == nil, "a code's random bytes are in the files")
            }
        }
    }

    @Test func everyRedemptionAttemptIsRecordedWithItsVisitor() throws {
        let code = try Fixture.mint(.resetPassword, in: store)
        let wrongKind = #expect(throws: HeraldError.self) {
            try store.consume(code, expecting: [.verifyEmail], visitor: Fixture.visitor, now: Date())
        }
        #expect(wrongKind?.code == .invalidOOBCode)
        _ = try store.consume(code, expecting: [.resetPassword], visitor: Fixture.visitor, now: Date())
        let again = #expect(throws: HeraldError.self) {
            try store.consume(code, expecting: [.resetPassword], visitor: Visitor(ip: "198.51.100.1", userAgent: nil), now: Date())
        }
        #expect(again?.code == .invalidOOBCode)
        #expect(throws: HeraldError.self) { try store.consume("unknown", expecting: [.resetPassword], visitor: Fixture.visitor, now: Date()) }
        let codeID = try #require(try store.code(code)?.id)
        let events = try store.read { db in
            try Row.fetchAll(db, sql: "SELECT code_id, kind, ip, user_agent, detail FROM link_events ORDER BY id")
        }
        // A code that does not exist adds no row: one to its network's hourly counter.
        #expect(events.map { $0["kind"] as String } == ["rejected", "redeemed", "rejected"])
        #expect(events.map { $0["code_id"] as Int64? } == [codeID, codeID, codeID])
        #expect(events.map { $0["detail"] as String? } == ["INVALID_OOB_CODE", nil, "INVALID_OOB_CODE"])
        #expect(events.map { $0["ip"] as String? } == ["203.0.113.7", "203.0.113.7", "198.51.100.1"])
        #expect(events[1]["user_agent"] as String? == Fixture.visitor.userAgent)
        let counted = try store.abuseCounts(since: Date().addingTimeInterval(-3600), limit: 100).map { "\($0.counter) \($0.key) \($0.count)" }
        #expect(counted == ["unknown-code 203.0.113.0/24 1"])
    }

    @Test func unknownCodesPastTheVisitorsLimitAreNotCountedAtAll() throws {
        var visitor = Fixture.visitor
        visitor.countsUnknownCodes = false
        for _ in 0..<100 {
            try store.recordLinkEvent(codeID: nil, kind: .click, visitor: visitor, detail: nil, now: Date())
        }
        #expect(try store.abuseCounts(since: Date().addingTimeInterval(-3600), limit: 100).isEmpty)
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM link_events") } == 0)
    }

    @Test func pruningDropsOnlyWhatIsOlderThanTheRetention() throws {
        let code = try Fixture.mint(.resetPassword, in: store)
        let codeID = try #require(try store.code(code)?.id)
        let now = Date()
        for age in [100.0, 1.0] {
            let at = now.addingTimeInterval(-age * 86_400)
            try store.recordLinkEvent(codeID: codeID, kind: .click, visitor: Fixture.visitor, detail: nil, now: at)
            try store.addAbuseCounts([AbuseCount(counter: "ip", key: "192.0.2.0/24", hour: at, count: 2)])
        }
        #expect(try store.pruneEvents(before: now.addingTimeInterval(-90 * 86_400)) == 2)
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM link_events") } == 1)
        #expect(try store.abuseCounts(since: .distantPast, limit: 100).count == 1)
    }

    @Test func concurrentRedemptionsRecordOneRedeemedAndTheFirstRejections() async throws {
        let code = try Fixture.mint(.resetPassword, in: store)
        let store = self.store
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask { _ = try? store.consume(code, expecting: [.resetPassword], visitor: Fixture.visitor, now: Date()) }
            }
        }
        let kinds = try store.read { db in try String.fetchAll(db, sql: "SELECT kind FROM link_events ORDER BY id") }
        #expect(kinds.filter { $0 == "redeemed" }.count == 1)
        // 49 were rejected; a code keeps its first 20 clicks and rejections as rows (a bound on the ledger).
        #expect(kinds.filter { $0 == "rejected" }.count == 20)
    }

    @Test func unreadableRowIsFailedInsteadOfBlockingTheQueue() throws {
        let bad = try store.enqueue(Fixture.request(.verifyEmail, "a@example.com"), messageDomain: Fixture.messageDomain)
        let good = try store.enqueue(Fixture.request(.verifyEmail, "b@example.com"), messageDomain: Fixture.messageDomain)
        try store.pool.write { db in try db.execute(sql: "UPDATE outbox SET settings = 'not json' WHERE id = ?", arguments: [bad]) }
        #expect(try store.claim(Fixture.policy()).map(\.message.id) == [good])
        let row = try store.read { db in try Row.fetchOne(db, sql: "SELECT state, last_reply FROM outbox WHERE id = ?", arguments: [bad]) }
        #expect(row?["state"] as String? == "failed")
        #expect((row?["last_reply"] as String?)?.hasPrefix("unreadable row") == true)
    }

    @Test func durableWritesLeaveTheConnectionAtNormalSynchronous() throws {
        try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain)
        #expect(try store.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 1)
    }

    @Test func unopenableDatabaseIsAnInvalidConfigurationNamingThePath() throws {
        let file = scratch.path("a-file")
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        for path in [file + "/ledger.sqlite", scratch.url.path] {
            let error = #expect(throws: HeraldError.self) { try SQLiteStore(path: path) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.description.contains(path) == true)
        }
    }
}
