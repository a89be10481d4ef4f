import Foundation
import HeraldCore
import HeraldMail
import HeraldStore
import Logging

/// The dispatch loop: claim → render → send → record, on one thread per SMTP connection.
///
/// libcurl blocks, so each connection gets its own `Thread`; nothing here runs on Swift's
/// cooperative pool. Stopping finishes and records the in-flight send on every thread, hands
/// unsent claimed rows back to the queue, then returns — within one `smtp.timeout`.
///
/// Nothing passing is fatal: an unavailable ledger is waited out (`LedgerWatch`), a failing SMTP
/// server pauses its connection without charging messages (`ConnectionBreaker`), and a dead
/// worker's rows come back within seconds (`Housekeeper`). Only other errors stop the loop.
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
    /// A claimed row is only sent while this much of its lease remains (one SMTP exchange); otherwise it goes back.
    let leaseMargin: TimeInterval
    /// How long recording a finished send keeps trying for an unavailable ledger after a stop.
    let stopGrace: TimeInterval
    let connectionBackoff: (base: TimeInterval, cap: TimeInterval)
    let heartbeatTimeout: TimeInterval
    /// `ledger.eventRetention`: the housekeeper prunes older events; 0 keeps them.
    let eventRetention: TimeInterval
    let logger: Logger
    let makeTransport: @Sendable () throws -> any MailTransport
    /// `worker.maxRate`, shared by every connection of this process.
    let rateLimiter: RateLimiter?
    /// Told why the ledger is unavailable while the worker waits for it, and nil once it is back.
    public var onLedgerUnavailable: @Sendable (String?) -> Void = { _ in }

    public init(
        store: any OutboxStore, composer: MessageComposer, configuration: HeraldConfiguration, logger: Logger,
        makeTransport: @escaping @Sendable () throws -> any MailTransport
    ) {
        self.store = store
        self.composer = composer
        policy = ClaimPolicy(configuration)
        retry = RetryPolicy(base: configuration.worker.backoffBase, cap: configuration.worker.backoffCap)
        pollInterval = configuration.worker.pollInterval
        leaseMargin = min(configuration.smtp.connectTimeout + configuration.smtp.timeout, configuration.worker.lease / 2)
        stopGrace = configuration.smtp.timeout
        connectionBackoff = (configuration.worker.connectionBackoffBase, configuration.worker.connectionBackoffCap)
        heartbeatTimeout = configuration.worker.heartbeatTimeout
        eventRetention = configuration.ledger.eventRetention
        self.logger = logger
        self.makeTransport = makeTransport
        rateLimiter = RateLimiter(perSecond: configuration.worker.maxRate)
    }

    /// Runs `concurrency` connection threads until stopped, or until nothing is pending when `untilEmpty`.
    public func run(untilEmpty: Bool, concurrency: Int, stop: StopSignal) async throws -> WorkerSummary {
        let started = Date()
        let results = ThreadResults()
        let watch = LedgerWatch(logger: logger, onChange: onLedgerUnavailable)
        let housekeeping = StopSignal()
        let housekeeper = Housekeeper(
            store: store, logger: logger, watch: watch, stop: housekeeping, heartbeatTimeout: heartbeatTimeout,
            maxAttempts: policy.maxAttempts, eventRetention: eventRetention)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let group = DispatchGroup()
            group.enter()
            let starter = Thread {
                defer { group.leave() }
                // Registered, and dead workers' rows back in the queue, before the first claim.
                housekeeper.start()
                for index in 0..<max(1, concurrency) {
                    group.enter()
                    let thread = Thread {
                        defer { group.leave() }
                        do {
                            let context = Connection(owner: "\(housekeeper.me.id)/\(index)", watch: watch, stop: stop)
                            results.add(try self.loop(untilEmpty: untilEmpty, context: context))
                        } catch {
                            results.fail(error)
                            stop.stop()  // one broken connection thread stops the others cleanly
                        }
                    }
                    thread.name = "herald-smtp-\(index)"
                    thread.start()
                }
            }
            starter.name = "herald-worker"
            starter.start()
            group.notify(queue: .global()) {
                housekeeping.stop()
                housekeeper.waitUntilDone()
                if let error = results.error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
        }
        var summary = results.summary
        summary.seconds = Date().timeIntervalSince(started)
        return summary
    }

    /// What one connection's three threads share.
    struct Connection: Sendable {
        /// Names this connection's claims: `<worker id>/<index>`.
        let owner: String
        let watch: LedgerWatch
        let stop: StopSignal
    }

    /// A claimed row with its message built (or the reason it could not be built).
    struct Prepared: Sendable {
        let claimed: ClaimedMessage
        let composed: Result<MessageComposer.Composed, HeraldError>
    }

    /// One connection as a three-stage pipeline, each stage on its own thread: the preparer claims
    /// and renders ahead, this thread only sends, the recorder writes each outcome to the ledger.
    /// The SMTP connection never waits for rendering or claiming. A finished send waits until the
    /// recorder has taken the previous outcome, so at most two sends per connection are ever
    /// unrecorded (one being recorded, one just sent): a crash can duplicate only those.
    private func loop(untilEmpty: Bool, context: Connection) throws -> WorkerSummary {
        let transport = try makeTransport()
        let stop = context.stop
        let breaker = ConnectionBreaker(base: connectionBackoff.base, cap: connectionBackoff.cap)
        let prepared = Handoff<Prepared>(capacity: 16)
        let outcomes = Handoff<Outcome>(capacity: 1)
        let preparer = Preparer(worker: self, handoff: prepared, untilEmpty: untilEmpty, context: context, breaker: breaker)
        let recorder = Recorder(worker: self, outcomes: outcomes, preparer: preparer, context: context)
        let base = Thread.current.name ?? "herald-smtp"
        for (stage, body) in [("prepare", preparer.run), ("record", recorder.run)] {
            let thread = Thread(block: body)
            thread.name = "\(base)-\(stage)"
            thread.start()
        }
        var summary = WorkerSummary()
        var failure: (any Error)?
        func giveBack(_ items: [Prepared]) {
            guard !items.isEmpty else { return }
            do {
                _ = try context.watch.run("handing back claimed rows", stop: stop, persistence: .afterStop(stopGrace)) {
                    try store.release(items.map(\.claimed))
                }
            } catch {
                failure = failure ?? error
            }
            summary.released += items.count
            preparer.settled(items.count)
        }
        while let item = prepared.take() {
            if stop.isStopped {
                giveBack([item] + prepared.close())
                break
            }
            let leaseLeft = item.claimed.claimedAt.addingTimeInterval(policy.lease).timeIntervalSinceNow
            if leaseLeft < leaseMargin || breaker.pause != nil {
                // The lease is nearly over (another worker may soon take the row), or the connection
                // is paused: hand it back unsent.
                giveBack([item])
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
            var pause: TimeInterval?
            if result.outcome == .connection {
                pause = breaker.failed(result.replyText)
            } else if let outage = breaker.succeeded() {
                let seconds = String(format: "%.1f", Date().timeIntervalSince(outage.since))
                logger.info("SMTP connection recovered after \(seconds) s (\(outage.failures) failed attempt(s))")
            }
            let outcome = Outcome(claimed: item.claimed, result: result, startedAt: started, finishedAt: Date(), pause: pause)
            // False only when the recorder failed; the unrecorded row returns when this worker is found gone.
            guard outcomes.put(outcome, waitUntilTaken: true) else { break }
            if let pause {
                logger.warning(
                    "SMTP connection failed; waiting for the server: this connection pauses \(String(format: "%.1f", pause)) s",
                    metadata: ["reply": "\(result.replyText)", "connection": "\(context.owner)"])
                giveBack(prepared.drain())
                breaker.waitWhilePaused(stop)
            }
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
        /// Set for a connection-level failure: the row goes back uncharged and is due after this pause.
        let pause: TimeInterval?
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
    func record(_ outcome: Outcome, summary: inout WorkerSummary, context: Connection) throws {
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
        case .connection:
            decision = .returned(until: outcome.finishedAt.addingTimeInterval(outcome.pause ?? connectionBackoff.base))
            summary.returned += 1
        case .transient where message.attempts >= policy.maxAttempts:
            decision = .dead
            summary.dead += 1
        case .transient:
            decision = .deferred(until: Date().addingTimeInterval(retry.delay(afterAttempt: message.attempts)))
            summary.deferred += 1
        }
        let record = DeliveryRecord(
            decision: decision, replyCode: result.replyCode, replyText: result.replyText, startedAt: outcome.startedAt,
            finishedAt: outcome.finishedAt)
        // A send that happened must be recorded: an unavailable ledger is waited for, even a while past a stop.
        _ = try context.watch.run("recording a delivery", stop: context.stop, persistence: .afterStop(stopGrace)) {
            try store.record(outcome.claimed, record, policy: policy)
        }
        switch decision {
        case .sent:
            logger.debug("sent", metadata: ["outbox": "\(message.id)", "action": "\(message.kind.rawValue)"])
        case .deferred(let until):
            logger.warning("deferred", metadata: metadata(message, result, ["retryAt": "\(until)"]))
        case .returned(let until):
            logger.info("not sent: the connection failed; back in the queue uncharged", metadata: metadata(message, result, ["retryAt": "\(until)"]))
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
