import Foundation
import GRDB
import HeraldCore
import HeraldMail
import Synchronization
import Testing

@testable import HeraldStore
@testable import HeraldWorker

/// The dispatch loop end to end: a real ledger and real templates, a scripted transport at the
/// `MailTransport` seam.
@Suite(.timeLimit(.minutes(1))) struct WorkerTests {
    let fixture: WorkerFixture

    init() throws {
        fixture = try WorkerFixture()
    }

    @Test func everythingQueuedIsSentOnceAndRecordedSentWithTheReply() async throws {
        let kinds: [ActionKind] = [.verifyEmail, .resetPassword, .signIn, .verifyAndChangeEmail]
        let ids = try (0..<12).map { try fixture.enqueue(kinds[$0 % kinds.count], "u\($0)@example.com") }
        let server = ScriptedMailServer()
        let summary = try await fixture.worker(sendingTo: server).run(untilEmpty: true, concurrency: 3, stop: StopSignal())
        #expect(summary.sent == 12)
        #expect(summary.deferred + summary.failed + summary.dead + summary.released == 0)
        let rows = try fixture.store.messages()
        #expect(rows.map(\.id) == ids)
        let received = server.received
        let recipients = received.flatMap(\.recipients)
        #expect(recipients.count == 12)
        #expect(Set(recipients) == Set(rows.map(\.recipient.value)))
        #expect(received.allSatisfy { $0.sender == "noreply@herald-demo.example" })
        for row in rows {
            #expect(row.state == .sent)
            #expect(row.attempts == 1)
            #expect(row.lastReplyCode == 250)
            #expect(row.lastReply == DeliveryResult.accepted.replyText)
            #expect(try fixture.store.attempts(outboxID: row.id).map(\.outcome) == ["sent"])
            #expect(received.filter { $0.text.contains("Message-ID: \(row.messageID)\r\n") }.count == 1)
        }
    }

    @Test func sentMessageCarriesACodeWhoseHashIsWhatTheLedgerStores() async throws {
        let id = try fixture.enqueue(.resetPassword)
        let server = ScriptedMailServer()
        _ = try await fixture.worker(sendingTo: server).run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        let mail = try #require(server.received.first)
        #expect(mail.recipients == ["ada@example.com"])
        let code = try #require(mail.actionCode)
        let record = try #require(try fixture.store.code(code))
        #expect(record.outboxID == id)
        #expect(record.kind == .resetPassword)
        let storedHash = try fixture.store.read { db in
            try Data.fetchOne(db, sql: "SELECT code_hash FROM action_codes WHERE outbox_id = ?", arguments: [id])
        }
        #expect(storedHash == Data(ActionCode.ledgerKey(code)))
        for suffix in ["", "-wal"] {
            let file = try #require(FileManager.default.contents(atPath: fixture.databasePath + suffix))
            #expect(file.range(of: Data(code.utf8)) == nil)
        }
    }

    @Test func transientReplyDefersTheRowWithANextAttemptAndRecordsTheAttempt() async throws {
        let id = try fixture.enqueue()
        let stop = StopSignal()
        let server = ScriptedMailServer(script: [.greylisted]) { _ in stop.stop() }
        let worker = try fixture.worker(sendingTo: server) {
            $0.worker.backoffBase = 30
            $0.worker.backoffCap = 3600
        }
        let started = Date()
        let summary = try await worker.run(untilEmpty: false, concurrency: 1, stop: stop)
        #expect(summary.deferred == 1)
        let row = try #require(try fixture.store.messages().first)
        #expect(row.state == .deferred)
        #expect(row.attempts == 1)
        #expect(row.lastReplyCode == 451)
        #expect(row.nextAttemptAt >= started.addingTimeInterval(14.9))
        #expect(row.nextAttemptAt <= Date().addingTimeInterval(30.1))
        let attempts = try fixture.store.attempts(outboxID: id)
        #expect(attempts.map(\.outcome) == ["deferred"])
        #expect(attempts.first?.replyText == DeliveryResult.greylisted.replyText)
    }

    @Test func permanentReplyFailsTheRow() async throws {
        let id = try fixture.enqueue()
        let server = ScriptedMailServer(script: [.noSuchUser])
        let summary = try await fixture.worker(sendingTo: server).run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        #expect(summary.failed == 1)
        let row = try #require(try fixture.store.messages().first)
        #expect(row.state == .failed)
        #expect(row.lastReplyCode == 550)
        #expect(row.lastReply == DeliveryResult.noSuchUser.replyText)
        #expect(try fixture.store.attempts(outboxID: id).map(\.outcome) == ["failed"])
        #expect(server.received.count == 1)
    }

    @Test func deferredRowIsRetriedAndDiesWhenItsAttemptsRunOut() async throws {
        let id = try fixture.enqueue()
        let server = ScriptedMailServer(script: [.greylisted, .greylisted])
        let worker = try fixture.worker(sendingTo: server) {
            $0.worker.maxAttempts = 2
            $0.worker.backoffBase = 0.01
            $0.worker.backoffCap = 0.01
        }
        let summary = try await worker.run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        #expect(summary.deferred == 1)
        #expect(summary.dead == 1)
        let row = try #require(try fixture.store.messages().first)
        #expect(row.state == .dead)
        #expect(row.attempts == 2)
        #expect(try fixture.store.attempts(outboxID: id).map(\.outcome) == ["deferred", "dead"])
        #expect(server.received.count == 2)
    }

    @Test func rowWhoseMessageCannotBeBuiltFailsWithoutReachingTheTransport() async throws {
        let now = Date()
        let campaign = try fixture.store.campaign(
            named: "names", kind: .verifyEmail, settings: ActionCodeSettings(), rate: nil, startAt: now, linkLifetime: nil, source: "test",
            now: now)
        var schedule = CampaignSchedule(start: now, interval: 0, position: 0)
        let recipient = CampaignRecipient(
            email: "eve@example.com", displayName: "Eve\r\nBcc: victim@example.com", locale: try LocaleTag("en"), variablesJSON: nil, line: 2)
        _ = try fixture.store.addRecipients(
            [recipient], to: campaign, schedule: &schedule, messageDomain: WorkerFixture.messageDomain, now: now)
        let server = ScriptedMailServer()
        let summary = try await fixture.worker(sendingTo: server).run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        #expect(summary.failed == 1)
        #expect(server.received.isEmpty)
        let row = try #require(try fixture.store.messages().first)
        #expect(row.state == .failed)
        #expect(row.lastReplyCode == nil)
        #expect(row.lastReply?.hasPrefix("could not build the message") == true)
    }

    @Test func untilEmptyReturnsAtOnceWhenNothingIsQueued() async throws {
        let server = ScriptedMailServer()
        let summary = try await fixture.worker(sendingTo: server).run(untilEmpty: true, concurrency: 2, stop: StopSignal())
        #expect(summary.sent == 0)
        #expect(server.received.isEmpty)
        #expect(try fixture.store.queueStatus().pending == 0)
    }

    @Test func stopMidRunReleasesUnsentClaimedRowsToTheQueue() async throws {
        for n in 0..<5 { try fixture.enqueue(.verifyEmail, "u\(n)@example.com") }
        let stop = StopSignal()
        let server = ScriptedMailServer { sends in if sends == 1 { stop.stop() } }
        let summary = try await fixture.worker(sendingTo: server).run(untilEmpty: false, concurrency: 1, stop: stop)
        #expect(summary.sent == 1)
        #expect(summary.released == 4)
        #expect(server.received.count == 1)
        #expect(try fixture.store.stateCounts() == [.sent: 1, .queued: 4])
        #expect(try fixture.store.messages(state: .queued).allSatisfy { $0.attempts == 0 && $0.leaseUntil == nil })
    }

    @Test func serviceRethrowsAStoreFailureAndReportsItToOnFailure() async throws {
        try fixture.enqueue()
        try fixture.store.pool.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER refuse_claims BEFORE UPDATE OF state ON outbox WHEN NEW.state = 'sending'
                    BEGIN SELECT RAISE(ABORT, 'claims refused by the test'); END
                    """)
        }
        let failures = FailureLog()
        let service = WorkerService(
            worker: try fixture.worker(sendingTo: ScriptedMailServer()), concurrency: 1, untilEmpty: true,
            onFailure: { await failures.append($0) })
        let error = await #expect(throws: DatabaseError.self) { try await service.run() }
        #expect(error?.message == "claims refused by the test")
        let reported = await failures.errors
        #expect(reported.count == 1)
        #expect((reported.first as? DatabaseError)?.message == "claims refused by the test")
        let row = try #require(try fixture.store.messages().first)
        #expect(row.state == .queued)
        #expect(row.attempts == 0)
    }
}

/// What production throws at the worker: outages of the relay and of the ledger, dead workers.
@Suite(.timeLimit(.minutes(1))) struct WorkerResilienceTests {
    let fixture: WorkerFixture

    init() throws {
        fixture = try WorkerFixture()
    }

    @Test func connectionFailuresChargeNoAttemptAndPauseTheConnection() async throws {
        for n in 0..<3 { try fixture.enqueue(.verifyEmail, "u\(n)@example.com") }
        let server = ScriptedMailServer(script: [.refused, .refused, .refused])
        let worker = try fixture.worker(sendingTo: server) {
            $0.worker.connectionBackoffBase = 0.1
            $0.worker.connectionBackoffCap = 0.2
            $0.worker.maxAttempts = 1
        }
        let started = Date()
        let summary = try await worker.run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        #expect(summary.sent == 3)
        #expect(summary.returned == 3)
        #expect(summary.dead == 0)
        // Three pauses of 0.05–0.1, 0.1–0.2 and 0.1–0.2 s: the connection waited before each probe.
        #expect(Date().timeIntervalSince(started) >= 0.25)
        let rows = try fixture.store.messages()
        #expect(rows.allSatisfy { $0.state == .sent && $0.attempts == 1 }, "\(rows.map { ($0.state, $0.attempts) })")
        let attempts = try rows.flatMap { try fixture.store.attempts(outboxID: $0.id) }
        #expect(attempts.filter { $0.outcome == "connection" }.count == 3)
        #expect(attempts.filter { $0.outcome == "sent" }.count == 3)
    }

    @Test func aPossiblyDeliveredMessageIsChargedAndResentAtMostMaxUncertainRetriesTimes() async throws {
        let id = try fixture.enqueue()
        let server = ScriptedMailServer(otherwise: .unanswered)
        let worker = try fixture.worker(sendingTo: server) {
            $0.worker.maxUncertainRetries = 2
            $0.worker.maxAttempts = 8
            $0.worker.backoffBase = 0.01
            $0.worker.backoffCap = 0.01
            $0.worker.connectionBackoffBase = 0.01
            $0.worker.connectionBackoffCap = 0.01
        }
        let summary = try await worker.run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        #expect(summary.possiblyDelivered == 3)
        #expect(summary.returned == 0 && summary.dead == 0)
        #expect(server.received.count == 3, "one copy, then maxUncertainRetries more")
        let row = try #require(try fixture.store.messages().first)
        #expect(row.state == .possiblyDelivered)
        #expect((row.attempts, row.possiblyDelivered) == (3, 3))
        #expect(row.lastReply == DeliveryResult.unanswered.replyText)
        #expect(try fixture.store.attempts(outboxID: id).map(\.outcome) == Array(repeating: "possibly-delivered", count: 3))
    }

    @Test func withNoUncertainRetriesAPossiblyDeliveredMessageIsNeverSentAgain() async throws {
        let id = try fixture.enqueue()
        let server = ScriptedMailServer(otherwise: .unanswered)
        let worker = try fixture.worker(sendingTo: server) {
            $0.worker.maxUncertainRetries = 0
            $0.worker.backoffBase = 0.01
            $0.worker.backoffCap = 0.01
        }
        _ = try await worker.run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        #expect(server.received.count == 1)
        let row = try #require(try fixture.store.messages().first)
        #expect((row.state, row.attempts) == (.possiblyDelivered, 1))
        #expect(try fixture.store.attempts(outboxID: id).map(\.outcome) == ["possibly-delivered"])
    }

    @Test func aPossiblyDeliveredMessageWaitsForItsOwnBackoffAndMaySendOnRetry() async throws {
        let id = try fixture.enqueue()
        let stop = StopSignal()
        let server = ScriptedMailServer(script: [.unanswered]) { _ in stop.stop() }
        let worker = try fixture.worker(sendingTo: server) {
            $0.worker.backoffBase = 30
            $0.worker.backoffCap = 3600
            $0.worker.connectionBackoffBase = 0.01
            $0.worker.connectionBackoffCap = 0.01
        }
        let started = Date()
        _ = try await worker.run(untilEmpty: false, concurrency: 1, stop: stop)
        var row = try #require(try fixture.store.messages().first)
        // Not the connection's backoff, and charged: the message's own retry, 15–30 s after its first attempt.
        #expect((row.state, row.attempts, row.possiblyDelivered) == (.deferred, 1, 1))
        #expect(row.nextAttemptAt >= started.addingTimeInterval(14.9))
        #expect(row.nextAttemptAt <= Date().addingTimeInterval(30.1))
        try fixture.store.write { db in try db.execute(sql: "UPDATE outbox SET next_attempt_at = 0 WHERE id = ?", arguments: [id]) }
        _ = try await fixture.worker(sendingTo: server).run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        row = try #require(try fixture.store.messages().first)
        #expect((row.state, row.attempts, row.possiblyDelivered) == (.sent, 2, 1))
        #expect(try fixture.store.attempts(outboxID: id).map(\.outcome) == ["possibly-delivered", "sent"])
    }

    @Test func mailUndeliverablePastTheQueueLifetimeExpires() async throws {
        let id = try fixture.enqueue()
        let server = ScriptedMailServer(otherwise: .refused)
        let worker = try fixture.worker(sendingTo: server) {
            $0.worker.connectionBackoffBase = 0.1
            $0.worker.connectionBackoffCap = 0.2
            $0.worker.maxQueueLifetime = 0.5
        }
        let summary = try await worker.run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        #expect(summary.dead == 0 && summary.failed == 0)
        let row = try #require(try fixture.store.messages().first { $0.id == id })
        #expect(row.state == .expired)
        #expect(row.attempts == 0)
        #expect(row.lastReply?.hasPrefix("expired: undelivered for longer than worker.maxQueueLifetime (last reply: curl error 7") == true)
    }

    /// Owners from before `worker.unrecordedPerConnection` (`<worker>/<connection>`) had a bound of two.
    @Test func aDeadWorkersRowsComeBackAndOnlyTwoPerConnectionAreCharged() async throws {
        try await deadWorkersRowsComeBack(owner: "deadbeef/0", charged: 2)
    }

    @Test func aDeadWorkersRowsComeBackAndOnlyItsBoundPerConnectionIsCharged() async throws {
        try await deadWorkersRowsComeBack(owner: ClaimOwner.name(worker: "deadbeef", connection: 0, unrecorded: 4), charged: 4)
    }

    private func deadWorkersRowsComeBack(owner: String, charged: Int) async throws {
        for n in 0..<6 { try fixture.enqueue(.verifyEmail, "u\(n)@example.com") }
        // A worker "on this host" whose process is gone, holding every row on one connection.
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let now = Date()
        try fixture.store.register(
            WorkerProcess(id: "deadbeef", host: WorkerHost.identity, pid: gone.processIdentifier, startedAt: now, heartbeatAt: now))
        let claimed = try fixture.store.claim(ClaimPolicy(HeraldConfiguration()), owner: owner, now: now)
        #expect(claimed.count == 6)

        let server = ScriptedMailServer()
        let started = Date()
        let summary = try await fixture.worker(sendingTo: server).run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        #expect(Date().timeIntervalSince(started) < 10, "the rows waited for their 5-minute lease")
        #expect(summary.sent == 6)
        let rows = try fixture.store.messages()
        #expect(rows.allSatisfy { $0.state == .sent })
        let interrupted = try rows.filter { try fixture.store.attempts(outboxID: $0.id).contains { $0.outcome == "interrupted" } }
        #expect(interrupted.map(\.id) == Array(claimed.prefix(charged)).map(\.message.id))
        #expect(interrupted.allSatisfy { $0.attempts == 2 })
        #expect(rows.filter { !interrupted.map(\.id).contains($0.id) }.allSatisfy { $0.attempts == 1 })
        #expect(try fixture.store.liveWorkers(now: Date()).isEmpty)
    }

    @Test func aLockedLedgerIsWaitedOutAndReportedUntilItIsBack() async throws {
        for n in 0..<3 { try fixture.enqueue(.verifyEmail, "u\(n)@example.com") }
        let store = try SQLiteStore(path: fixture.databasePath, busyTimeout: 0.1)
        let blocker = try DatabaseQueue(path: fixture.databasePath)
        let reports = Mutex<[String?]>([])
        var worker = try WorkerFixture.worker(store: store, templates: fixture.templates, sendingTo: ScriptedMailServer())
        worker.onLedgerUnavailable = { reason in reports.withLock { $0.append(reason) } }
        // Another process's write lock, held 1.5 s: ten times the busy timeout.
        let locked = DispatchSemaphore(value: 0)
        let holder = Thread {
            try? blocker.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                locked.signal()
                Thread.sleep(forTimeInterval: 1.5)
                try db.execute(sql: "COMMIT")
            }
        }
        holder.start()
        locked.wait()
        let summary = try await worker.run(untilEmpty: true, concurrency: 1, stop: StopSignal())
        #expect(summary.sent == 3)
        let seen = reports.withLock { $0 }
        #expect(seen.first??.hasPrefix("ledger: ledger unavailable: database is locked") == true, "\(seen)")
        #expect(seen.last == .some(nil), "\(seen)")
    }

    /// A process queueing mail one message at a time (as `herald serve` does under a trickle of requests) wakes its
    /// worker, which claims what came meanwhile at most every `LedgerDesk.trickleWait`, not each message on its own.
    @Test func aTrickleOfQueuedMailIsClaimedInBunches() async throws {
        var worker = try fixture.worker(sendingTo: ScriptedMailServer())
        let signal = QueueSignal()
        worker.queueSignal = signal
        let stop = StopSignal()
        let running = Task { [worker] in try await worker.run(untilEmpty: false, concurrency: 1, stop: stop) }
        let messages = 60
        let started = Date()
        for n in 0..<messages {
            try fixture.enqueue(.verifyEmail, "u\(n)@example.com")
            signal.signal()
            try await Task.sleep(for: .milliseconds(2))
        }
        let queueing = Date().timeIntervalSince(started)
        let deadline = Date().addingTimeInterval(20)
        while try fixture.store.stateCounts()[.sent] != messages && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        stop.stop()
        let summary = try await running.value
        #expect(summary.sent == messages)
        // One claim mints its codes at one time: the distinct times are the claims that took rows.
        let claims = try fixture.store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT created_at) FROM action_codes") } ?? 0
        // Claimed as signalled, each message (2 ms apart) was a claim of its own; bunched, one claim per 20 ms of
        // queueing, plus the first and the last.
        let bound = Int(queueing / LedgerDesk.trickleWait) + 3
        #expect(claims >= 2 && claims <= bound, "\(claims) claims for \(messages) messages queued over \(queueing) s")
    }
}

/// The errors a `WorkerService` reported through `onFailure`.
actor FailureLog {
    private(set) var errors: [any Error] = []

    func append(_ error: any Error) { errors.append(error) }
}
