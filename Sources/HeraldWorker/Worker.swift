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
    let store: HeraldStore
    let composer: MessageComposer
    let policy: ClaimPolicy
    let retry: RetryPolicy
    let pollInterval: TimeInterval
    /// A claimed row is only sent while this much of its lease remains; otherwise it goes back.
    let leaseMargin: TimeInterval
    let logger: Logger
    let makeTransport: @Sendable () throws -> any MailTransport

    public init(
        store: HeraldStore, composer: MessageComposer, configuration: HeraldConfiguration, logger: Logger,
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

    /// One connection's loop; runs on its own thread.
    private func loop(untilEmpty: Bool, stop: StopSignal) throws -> WorkerSummary {
        let transport = try makeTransport()
        var summary = WorkerSummary()
        defer { summary.connections = transport.connectionsOpened }
        while !stop.isStopped {
            let batch = try store.claim(policy)
            if batch.isEmpty {
                let status = try store.queueStatus()
                if untilEmpty && status.pending == 0 { break }
                let untilDue = status.nextDue.map { $0.timeIntervalSinceNow } ?? pollInterval
                stop.wait(min(pollInterval, max(0.01, untilDue)))
                continue
            }
            for (index, claimed) in batch.enumerated() {
                let leaseLeft = claimed.claimedAt.addingTimeInterval(policy.lease).timeIntervalSinceNow
                if stop.isStopped || leaseLeft < leaseMargin {
                    // Stopping, or the lease is nearly over and another worker may soon take these rows.
                    let rest = Array(batch[index...])
                    try store.release(rest)
                    summary.released += rest.count
                    break
                }
                try deliver(claimed, over: transport, summary: &summary)
            }
        }
        summary.connections = transport.connectionsOpened
        return summary
    }

    private func deliver(_ claimed: ClaimedMessage, over transport: any MailTransport, summary: inout WorkerSummary) throws {
        let message = claimed.message
        let started = Date()
        let result: DeliveryResult
        do {
            let composed = try composer.compose(
                MessageComposer.Input(
                    kind: message.kind, email: message.email, newEmail: message.newEmail, displayName: message.displayName,
                    locale: message.locale, settings: message.settings, code: claimed.code.plaintext,
                    messageID: message.messageID, requestedAt: message.queuedAt, date: started))
            result = transport.send(from: composed.envelopeFrom, to: [composed.recipient], message: composed.bytes)
        } catch {
            result = DeliveryResult(outcome: .permanent, replyCode: nil, replyText: "could not build the message: \(error)")
        }
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
        let record = DeliveryRecord(
            decision: decision, replyCode: result.replyCode, replyText: result.replyText, startedAt: started, finishedAt: Date())
        try recordDurably(claimed, record)
        var metadata: Logger.Metadata = [
            "outbox": "\(message.id)", "action": "\(message.kind.rawValue)", "attempt": "\(message.attempts)",
            "reply": "\(result.replyText)",
        ]
        if case .deferred(let until) = decision { metadata["retryAt"] = "\(until)" }
        switch decision {
        case .sent: logger.debug("sent", metadata: metadata)
        case .deferred: logger.warning("deferred", metadata: metadata)
        case .failed: logger.error("failed permanently", metadata: metadata)
        case .dead: logger.error("dead: attempts exhausted", metadata: metadata)
        }
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
