import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// What the ledger does when time, liveness or the connection to PostgreSQL goes wrong.
@Suite struct LedgerFaultTests {
    let scratch = ScratchDirectory()

    /// A worker given up for dead learns it at its next heartbeat, which changes nothing until it rejoins.
    @Test(arguments: StoreKind.allCases)
    func aHeartbeatTellsAWorkerGivenUpForDeadAndRejoiningRevivesIt(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let now = Date()
        try store.register(WorkerProcess(id: "cafe0001", host: "elsewhere/boot", pid: 1, startedAt: now, heartbeatAt: now))
        #expect(try store.heartbeat(worker: "cafe0001", now: now) == true)
        try store.returnOrphans(ofWorker: "cafe0001", reason: "test", maxAttempts: 8, now: now)
        #expect(try store.heartbeat(worker: "cafe0001", now: now) == false, "a heartbeat must not revive a worker given up for dead")
        #expect(try store.liveWorkers(now: now).isEmpty)
        try store.rejoin(worker: "cafe0001", now: now)
        #expect(try store.liveWorkers(now: now).map(\.id) == ["cafe0001"])
        #expect(try store.heartbeat(worker: "cafe0001", now: now) == true)
    }

    /// Heartbeat ages come from the ledger's clock on PostgreSQL: a host whose clock is a minute ahead (or behind)
    /// neither looks long dead nor makes the others look so.
    @Test(arguments: StoreKind.allCases)
    func heartbeatAgesAreTheLedgersOnPostgreSQL(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let skewed = Date().addingTimeInterval(-600)
        try store.register(WorkerProcess(id: "cafe0002", host: "elsewhere/boot", pid: 1, startedAt: skewed, heartbeatAt: skewed))
        _ = try store.heartbeat(worker: "cafe0002", now: skewed)
        let age = try #require(try store.liveWorkers(now: Date()).first?.heartbeatAge)
        switch kind {
        case .postgres: #expect(abs(age) < 5, "aged by PostgreSQL's clock, not the writer's: \(age) s")
        case .sqlite: #expect(abs(age - 600) < 5, "one host, one clock: \(age) s")
        }
    }

    /// Mail queued by a process whose clock is ahead of the worker's (or before the worker's clock stepped back)
    /// is claimed at once, not after the difference.
    @Test(arguments: StoreKind.allCases)
    func mailQueuedByAClockAheadIsDueAtOnce(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let ahead = Date().addingTimeInterval(600)
        let id = try store.enqueue(
            Fixture.request(.verifyEmail, "ahead@example.com"), messageDomain: Fixture.messageDomain, throttle: nil, now: ahead)
        let claimed = try store.claimBatch(Fixture.policy(), owner: ClaimOwner.name(worker: "w", connection: 0, unrecorded: 2), now: Date())
        #expect(claimed.messages.map(\.message.id) == [id])
    }

    /// A claim whose answer was lost (the connection cut after its COMMIT) took rows nobody will send: the next
    /// claim of the same owner gives them back uncharged instead of leaving them in 'sending' until the lease ends.
    @Test(arguments: StoreKind.allCases)
    func rowsOfAClaimWhoseAnswerWasLostGoBackWithTheNextClaim(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.batchSize = 2 }
        let owner = ClaimOwner.name(worker: "w", connection: 0, unrecorded: 2)
        let ids = try (0..<3).map {
            try store.enqueue(Fixture.request(.verifyEmail, "lost\($0)@example.com"), messageDomain: Fixture.messageDomain)
        }
        let lost = Date(milliseconds: Date().milliseconds)
        #expect(try store.claimBatch(policy, owner: owner, now: lost).messages.map(\.message.id) == Array(ids.prefix(2)))
        let other = ClaimOwner.name(worker: "x", connection: 0, unrecorded: 2)
        #expect(try store.claimBatch(policy, owner: other, now: lost).messages.map(\.message.id) == [ids[2]], "another's rows stay its own")
        let next = try store.claimBatch(policy, owner: owner, now: lost.addingTimeInterval(1), abandoning: [lost])
        #expect(next.messages.map(\.message.id) == Array(ids.prefix(2)), "taken again, as new")
        #expect(next.messages.allSatisfy { $0.message.attempts == 1 }, "the lost claim's attempt was given back")
        #expect(try store.claimBatch(policy, owner: other, now: lost.addingTimeInterval(2)).messages.isEmpty)
    }
}

/// PostgreSQL connections that die, stall or wait for a lock: every wait ends.
@Suite(.enabled(if: StoreKind.allCases.contains(.postgres), "needs HERALD_TEST_POSTGRES"))
struct PostgresFaultTests {
    let scratch = ScratchDirectory()

    /// A pool of one connection on a fresh ledger, and the backend process id that connection has.
    func pool(_ name: String, timeouts: PostgresTimeouts = PostgresTimeouts(lock: 1, statement: 5)) throws -> PostgresPool {
        _ = try StoreKind.postgres.makeStore(in: scratch, name: name)  // creates and migrates the schema
        return try PostgresPool(location: StoreKind.postgresLocation(scratch.path(name)), size: 1, timeouts: timeouts)
    }

    func terminate(_ pid: Int64, name: String) throws {
        let other = try PostgresPool(location: StoreKind.postgresLocation(scratch.path(name)), size: 1)
        try other.withSession { session in _ = try session.execute("SELECT pg_terminate_backend(?::integer)", [pid]) }
        Thread.sleep(forTimeInterval: 0.3)  // the close reaches this process
    }

    /// postgres-nio dropped a statement written into a connection the server had just closed, and its caller
    /// waited for ever (the worker froze, `serve` ignored SIGTERM). Now it fails at once, as an outage.
    @Test func aStatementAfterTheServerEndedTheConnectionFailsAtOnce() throws {
        let pool = try pool("cut")
        let started = Date()
        let error = #expect(throws: HeraldError.self) {
            try pool.write { db in
                let pid = try #require(try db.fetchValue("SELECT pg_backend_pid()::bigint", as: Int64.self))
                try terminate(pid, name: "cut")
                _ = try db.execute("SELECT 1")
            }
        }
        #expect(error?.code == .unavailable)
        #expect(Date().timeIntervalSince(started) < 3, "failed after \(Date().timeIntervalSince(started)) s")
        #expect(try pool.read { db in try db.fetchValue("SELECT 1::bigint", as: Int64.self) } == 1, "a new connection replaces it")
    }

    /// A pooled connection the server closed while it sat idle (a restart) costs the next caller nothing.
    @Test func anIdleConnectionTheServerEndedIsReplacedUnnoticed() throws {
        let pool = try pool("idle")
        let pid = try #require(try pool.read { db in try db.fetchValue("SELECT pg_backend_pid()::bigint", as: Int64.self) })
        try terminate(pid, name: "idle")
        let again = try pool.read { db in try db.fetchValue("SELECT pg_backend_pid()::bigint", as: Int64.self) }
        #expect(again != nil && again != pid)
    }

    /// A lock held elsewhere (`LOCK TABLE outbox` in psql) is waited for `database.busyTimeout`, then the
    /// operation fails as an outage (the API answers 503) instead of waiting as long as the lock is held.
    @Test func aHeldLockIsWaitedForTheBusyTimeoutOnly() throws {
        let pool = try pool("lock")
        let holder = try PostgresPool(location: StoreKind.postgresLocation(scratch.path("lock")), size: 1)
        let locked = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            _ = try? holder.write { db in
                _ = try db.execute("LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE")
                locked.signal()
                Thread.sleep(forTimeInterval: 4)
            }
            done.signal()
        }.start()
        locked.wait()
        let started = Date()
        let error = #expect(throws: HeraldError.self) { try pool.read { db in try db.fetchAll("SELECT id FROM outbox LIMIT 1") } }
        #expect(error?.code == .unavailable)
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.9 && waited < 2.5, "waited \(waited) s against a lock timeout of 1 s")
        done.wait()
    }

    /// A server that says nothing (frozen, or gone without a reset) is given up after the answer deadline.
    @Test func aSilentServerIsGivenUpAfterTheAnswerDeadline() throws {
        let pool = try pool("silent", timeouts: PostgresTimeouts(lock: 1, statement: 60))
        let started = Date()
        let error = #expect(throws: HeraldError.self) {
            try pool.withSession { session in
                session.answerTimeout = 1  // pg_sleep stands in for a server that stopped answering
                _ = try session.execute("SELECT pg_sleep(5)")
            }
        }
        #expect(error?.code == .unavailable)
        #expect(Date().timeIntervalSince(started) < 3)
    }
}
