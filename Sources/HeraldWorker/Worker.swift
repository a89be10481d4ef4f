import Foundation
import HeraldCore
import HeraldMail
import HeraldStore
import Logging

/// The dispatch loop: claim → render → send → record, on one thread per SMTP connection.
///
/// libcurl blocks, so each connection gets its own `Thread`; nothing here runs on Swift's
/// cooperative pool. Stopping finishes and records the in-flight send on every thread, hands
/// unsent claimed rows back to the queue, then returns.
///
/// ```swift
/// let worker = Worker(store: store, composer: composer, configuration: configuration, logger: logger) {
///     try CurlSMTPConnection(settings: SMTPSettings(configuration.smtp))
/// }
/// let summary = try await worker.run(untilEmpty: true, concurrency: 2, stop: StopSignal())
/// ```
public struct Worker: Sendable {
    let store: any OutboxStore
    let composer: MessageComposer
    let policy: ClaimPolicy
    let retry: RetryPolicy
    let pollInterval: TimeInterval
    /// A claimed row is only sent while this much of its lease remains; otherwise it goes back.
    let leaseMargin: TimeInterval
    let logger: Logger
    let makeTransport: @Sendable () throws -> any MailTransport
    /// `worker.maxRate`, shared by every connection of this process.
    let rateLimiter: RateLimiter?

    public init(
        store: any OutboxStore, composer: MessageComposer, configuration: HeraldConfiguration, logger: Logger,
        makeTransport: @escaping @Sendable () throws -> any MailTransport
    ) {
        self.store = store
        self.composer = composer
        policy = ClaimPolicy(configuration)
        retry = RetryPolicy(base: configuration.worker.backoffBase, cap: configuration.worker.backoffCap)
        pollInterval = configuration.worker.pollInterval
        leaseMargin = min(configuration.smtp.timeout, configuration.worker.lease / 2)
        self.logger = logger
        self.makeTransport = makeTransport
        rateLimiter = RateLimiter(perSecond: configuration.worker.maxRate)
    }

    /// Runs `concurrency` connection threads until stopped, or until nothing is pending when `untilEmpty`.
    public func run(untilEmpty: Bool, concurrency: Int, stop: StopSignal) async throws -> WorkerSummary {
        let started = Date()
        let results = ThreadResults()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let group = DispatchGroup()
            for index in 0..<max(1, concurrency) {
                group.enter()
                let thread = Thread {
                    defer { group.leave() }
                    do {
                        results.add(try self.loop(untilEmpty: untilEmpty, stop: stop))
                    } catch {
                        results.fail(error)
                        stop.stop()  // one broken connection thread stops the others cleanly
                    }
                }
                thread.name = "herald-smtp-\(index)"
                thread.start()
            }
            group.notify(queue: .global()) {
                if let error = results.error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
        var summary = results.summary
        summary.seconds = Date().timeIntervalSince(started)
        return summary
    }

    /// A claimed row with its message built (or the reason it could not be built).
    struct Prepared: Sendable {
        let claimed: ClaimedMessage
        let composed: Result<MessageComposer.Composed, HeraldError>
    }

    /// One connection as a three-stage pipeline, each stage on its own thread: the preparer claims
    /// and renders ahead, this thread only sends, the recorder writes each outcome to the ledger.
    /// The SMTP connection never waits for rendering, claiming or SQLite. The outcome hand-off holds
    /// one item, so at most two sends per connection are ever unrecorded (one being recorded, one
    /// being sent): a crash can duplicate only those.
    private func loop(untilEmpty: Bool, stop: StopSignal) throws -> WorkerSummary {
        let transport = try makeTransport()
        let prepared = Handoff<Prepared>(capacity: 16)
        let outcomes = Handoff<Outcome>(capacity: 1)
        let preparer = Preparer(worker: self, handoff: prepared, untilEmpty: untilEmpty, stop: stop)
        let recorder = Recorder(worker: self, outcomes: outcomes, preparer: preparer)
        let base = Thread.current.name ?? "herald-smtp"
        for (stage, body) in [("prepare", preparer.run), ("record", recorder.run)] {
            let thread = Thread(block: body)
            thread.name = "\(base)-\(stage)"
            thread.start()
        }
        var summary = WorkerSummary()
        var failure: (any Error)?
        while let item = prepared.take() {
            if stop.isStopped {
                let rest = [item] + prepared.close()
                do { try store.release(rest.map(\.claimed)) } catch { failure = error }
                summary.released += rest.count
                preparer.settled(rest.count)
                break
            }
            let leaseLeft = item.claimed.claimedAt.addingTimeInterval(policy.lease).timeIntervalSinceNow
            if leaseLeft < leaseMargin {
                // The lease is nearly over and another worker may soon take the row: hand it back unsent.
                do { try store.release([item.claimed]) } catch { failure = error }
                summary.released += 1
                preparer.settled()
                continue
            }
            let started = Date()
            let result: DeliveryResult
            switch item.composed {
            case .success(let composed):
                rateLimiter?.acquire()
                result = transport.send(from: composed.envelopeFrom, to: [composed.recipient], message: composed.bytes)
            case .failure(let error):
                result = DeliveryResult(outcome: .permanent, replyCode: nil, replyText: "could not build the message: \(error)")
            }
            // False only when the recorder failed; the unrecorded row returns when its lease ends.
            guard outcomes.put(Outcome(claimed: item.claimed, result: result, startedAt: started, finishedAt: Date())) else { break }
        }
        _ = prepared.close()
        outcomes.finish()
        preparer.waitUntilDone()
        recorder.waitUntilDone()
        summary.add(recorder.summary)
        summary.released += preparer.released
        summary.connections = transport.connectionsOpened
        if let error = failure ?? recorder.error ?? preparer.error { throw error }
        return summary
    }

    /// A finished send waiting to be recorded.
    struct Outcome: Sendable {
        let claimed: ClaimedMessage
        let result: DeliveryResult
        let startedAt: Date
        let finishedAt: Date
    }

    /// Renders a claimed row; a failure becomes a permanent failure of that row, not of the worker.
    func prepare(_ claimed: ClaimedMessage) -> Prepared {
        let message = claimed.message
        let now = Date()
        do {
            let composed = try composer.compose(
                MessageComposer.Input(
                    kind: message.kind, email: message.email, newEmail: message.newEmail, displayName: message.displayName,
                    locale: message.locale, settings: message.settings, code: claimed.code.plaintext,
                    messageID: message.messageID, requestedAt: message.queuedAt, date: now, variables: message.variables,
                    campaignID: message.campaignID, lifetime: message.linkLifetime))
            return Prepared(claimed: claimed, composed: .success(composed))
        } catch let error as HeraldError {
            return Prepared(claimed: claimed, composed: .failure(error))
        } catch {
            return Prepared(claimed: claimed, composed: .failure(HeraldError(.templateError, "\(error)")))
        }
    }

    /// Decides the row's next state from a send's outcome and writes it to the ledger.
    func record(_ outcome: Outcome, summary: inout WorkerSummary) throws {
        let message = outcome.claimed.message
        let result = outcome.result
        let decision: DeliveryRecord.Decision
        switch result.outcome {
        case .sent:
            decision = .sent
            summary.sent += 1
        case .permanent:
            decision = .failed
            summary.failed += 1
        case .transient where message.attempts >= policy.maxAttempts:
            decision = .dead
            summary.dead += 1
        case .transient:
            decision = .deferred(until: Date().addingTimeInterval(retry.delay(afterAttempt: message.attempts)))
            summary.deferred += 1
        }
        try recordDurably(
            outcome.claimed,
            DeliveryRecord(
                decision: decision, replyCode: result.replyCode, replyText: result.replyText, startedAt: outcome.startedAt,
                finishedAt: outcome.finishedAt))
        switch decision {
        case .sent:
            logger.debug("sent", metadata: ["outbox": "\(message.id)", "action": "\(message.kind.rawValue)"])
        case .deferred(let until):
            logger.warning("deferred", metadata: metadata(message, result, ["retryAt": "\(until)"]))
        case .failed:
            logger.error("failed permanently", metadata: metadata(message, result))
        case .dead:
            logger.error("dead: attempts exhausted", metadata: metadata(message, result))
        }
    }

    private func metadata(_ message: OutboxMessage, _ result: DeliveryResult, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        [
            "outbox": "\(message.id)", "action": "\(message.kind.rawValue)", "attempt": "\(message.attempts)",
            "reply": "\(result.replyText)",
        ].merging(extra) { _, new in new }
    }

    /// A send that happened must be recorded: retry a busy or failing database before giving up.
    private func recordDurably(_ claimed: ClaimedMessage, _ record: DeliveryRecord) throws {
        var attempt = 0
        while true {
            do {
                return try store.record(claimed, record, policy: policy)
            } catch {
                attempt += 1
                if attempt >= 5 { throw error }
                logger.warning("could not record a delivery; retrying", metadata: ["outbox": "\(claimed.message.id)", "error": "\(error)"])
                Thread.sleep(forTimeInterval: 0.2 * Double(attempt))
            }
        }
    }
}

/// Collects per-thread summaries and the first error. `@unchecked Sendable`: guarded by `lock`.
private final class ThreadResults: @unchecked Sendable {
    private let lock = NSLock()
    private var combined = WorkerSummary()
    private var firstError: (any Error)?

    func add(_ summary: WorkerSummary) { lock.withLock { combined.add(summary) } }
    func fail(_ error: any Error) { lock.withLock { if firstError == nil { firstError = error } } }
    var summary: WorkerSummary { lock.withLock { combined } }
    var error: (any Error)? { lock.withLock { firstError } }
}
