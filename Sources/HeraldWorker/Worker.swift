import Foundation
import HeraldCore
import HeraldMail
import HeraldStore
import Logging
import Synchronization

/// The dispatch loop: claim → render → send → record. One send loop drives every SMTP connection
/// through a `MailDispatcher` and renders each message just before it goes (DKIM-signed mail is rendered
/// ahead, on every core: `RenderAhead`); each connection's
/// exchange goes without blocking (`CurlSMTPDispatcher`); the ledger
/// desk (`LedgerDesk`) claims rows for every connection and records their outcomes in group commits.
///
/// Nothing here runs on Swift's cooperative pool. Stopping finishes and records the in-flight send
/// on every connection, hands unsent claimed rows back to the queue, then returns — within one
/// `smtp.timeout`, or `smtp.dataTimeout` for a message whose final dot awaits its reply.
///
/// Nothing passing is fatal: an unavailable ledger is waited out (`LedgerWatch`), a failing SMTP
/// server pauses its connection without charging messages (`ConnectionBreaker`), and a dead
/// worker's rows come back within seconds (`Housekeeper`). Only other errors stop the loop. A message whose
/// final dot got no reply may have been delivered: it is charged, and sent again at most
/// `worker.maxUncertainRetries` times.
///
/// ```swift
/// let worker = Worker(store: store, composer: composer, configuration: configuration, logger: logger) { lanes in
///     try CurlSMTPDispatcher(settings: SMTPSettings(configuration.smtp), lanes: lanes)
/// }
/// let summary = try await worker.run(untilEmpty: true, concurrency: 2, stop: StopSignal())
/// ```
public struct Worker: Sendable {
    let store: any OutboxStore
    let composer: MessageComposer
    let policy: ClaimPolicy
    let retry: RetryPolicy
    /// `worker.maxUncertainRetries`: how often a possibly delivered message goes again.
    let maxUncertainRetries: Int
    let pollInterval: TimeInterval
    /// A claimed row is only sent while this much of its lease remains (one SMTP exchange); otherwise it goes back.
    let leaseMargin: TimeInterval
    /// How long recording a finished send keeps trying for an unavailable ledger after a stop.
    let stopGrace: TimeInterval
    /// `smtp.dataTimeout`: how long a send whose final dot is written may still wait for its reply after a stop.
    let dataTimeout: TimeInterval
    let connectionBackoff: (base: TimeInterval, cap: TimeInterval)
    let heartbeatTimeout: TimeInterval
    /// `ledger.eventRetention` and `ledger.messageRetention`: the housekeeper prunes older events and messages.
    let retention: HeraldConfiguration.Ledger
    let logger: Logger
    /// Opens the given number of SMTP connections as one dispatcher.
    let makeDispatcher: @Sendable (_ lanes: Int) throws -> any MailDispatcher
    /// `worker.maxRate`, shared by every connection of this process.
    let rateLimiter: RateLimiter?
    /// Counts recorded outcomes (`herald_sends_total`, …) through swift-metrics.
    let metrics = WorkerMetrics()
    /// The composers of campaigns with templates of their own, read from the ledger once per campaign.
    let campaignComposers = CampaignComposers()
    /// The templates edited in the console, read from the ledger at most once a minute.
    let templateOverrides = TemplateOverrides()
    /// Told why the ledger is unavailable while the worker waits for it, and nil once it is back.
    public var onLedgerUnavailable: @Sendable (String?) -> Void = { _ in }
    /// Told why the SMTP relay fails while it does, on each failed connection of an outage, and nil once it answers again.
    public var onRelayProblem: @Sendable (RelayProblem?) -> Void = { _ in }
    /// Mail queued by this process (`Actions.queued`): an idle worker claims at once instead of at its next poll.
    public var queueSignal: QueueSignal?
    /// The process also serves the API (`herald serve`). Its cores are the requests' too, so unsigned mail is rendered
    /// in the send loop, never ahead on them (`RenderAhead`); its disk is their commits', so the log is checkpointed
    /// in smaller steps (`checkpointInBackground(besideRequests:)`).
    public var besideAPI = false
    /// `ledger.archive`: where the housekeeper archives messages before message retention deletes them.
    public var archive: LedgerArchive?

    public init(
        store: any OutboxStore, composer: MessageComposer, configuration: HeraldConfiguration, logger: Logger,
        makeDispatcher: @escaping @Sendable (_ lanes: Int) throws -> any MailDispatcher
    ) {
        self.store = store
        self.composer = composer
        var policy = ClaimPolicy(configuration)
        policy.typedCodes = composer.typedCodeKey.map { TypedCodeMinting(key: $0, policy: configuration.policy) }
        self.policy = policy
        retry = RetryPolicy(base: configuration.worker.backoffBase, cap: configuration.worker.backoffCap)
        maxUncertainRetries = configuration.worker.maxUncertainRetries
        pollInterval = configuration.worker.pollInterval
        let smtp = configuration.smtp
        leaseMargin = min(smtp.connectTimeout + smtp.timeout + smtp.dataTimeout, configuration.worker.lease / 2)
        stopGrace = configuration.smtp.timeout
        dataTimeout = configuration.smtp.dataTimeout
        connectionBackoff = (configuration.worker.connectionBackoffBase, configuration.worker.connectionBackoffCap)
        heartbeatTimeout = configuration.worker.heartbeatTimeout
        retention = configuration.ledger
        self.logger = logger
        self.makeDispatcher = makeDispatcher
        rateLimiter = RateLimiter(perSecond: configuration.worker.maxRate, shared: store as? any SharedRateLimits)
    }

    /// A worker over blocking transports, one thread each (`ThreadedDispatcher`).
    public init(
        store: any OutboxStore, composer: MessageComposer, configuration: HeraldConfiguration, logger: Logger,
        makeTransport: @escaping @Sendable () throws -> any MailTransport
    ) {
        self.init(store: store, composer: composer, configuration: configuration, logger: logger) { lanes in
            ThreadedDispatcher(try (0..<lanes).map { _ in try makeTransport() })
        }
    }

    /// Runs `concurrency` SMTP connections and the ledger desk until stopped, or until nothing is pending
    /// when `untilEmpty`.
    public func run(untilEmpty: Bool, concurrency: Int, stop: StopSignal) async throws -> WorkerSummary {
        let started = MonotonicInstant.now()
        let results = ThreadResults()
        let watch = LedgerWatch(logger: logger, onChange: onLedgerUnavailable)
        let housekeeping = StopSignal()
        let housekeeper = Housekeeper(
            store: store, logger: logger, watch: watch, stop: housekeeping, heartbeatTimeout: heartbeatTimeout,
            maxAttempts: policy.maxAttempts, retention: retention, archive: archive)
        let count = max(1, concurrency)
        let inFlight = InFlightCount()
        // The log is copied beside the desk, not in its commits (`checkpointInBackground`).
        let stopCheckpoints = store.checkpointInBackground(besideRequests: besideAPI)
        defer { stopCheckpoints() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let group = DispatchGroup()
            group.enter()
            let sender = Thread.named("herald-send") {
                defer { group.leave() }
                // Registered, and dead workers' rows back in the queue, before the first claim.
                housekeeper.start()
                let dispatcher: any MailDispatcher
                do {
                    dispatcher = try makeDispatcher(count)
                } catch {
                    results.fail(error)
                    return
                }
                let owners = (0..<count).map {
                    ClaimOwner.name(worker: housekeeper.me.id, connection: $0, unrecorded: policy.unrecordedPerConnection)
                }
                let desk = LedgerDesk(
                    worker: self, owners: owners, untilEmpty: untilEmpty, watch: watch, stop: stop, fence: housekeeper.fence,
                    wake: dispatcher.waker)
                let signal = queueSignal
                let signalToken = signal?.observe { [weak desk] in desk?.queued() }
                group.enter()
                let deskThread = Thread.named("herald-ledger") {
                    defer { group.leave() }
                    desk.run()
                    if let signalToken { signal?.remove(signalToken) }
                    if let error = desk.error {
                        results.fail(error)
                        stop.stop()
                    }
                    results.add(desk.summary)
                }
                deskThread.start()
                do {
                    let told = onRelayProblem
                    let loop = SendLoop(
                        owners: owners, watch: watch, stop: stop, desk: desk, fence: housekeeper.fence, inFlight: inFlight,
                        relay: { problem in
                            housekeeper.relayChanged(problem)
                            told(problem)
                        })
                    results.add(try self.sendLoop(loop, dispatcher))
                } catch {
                    results.fail(error)
                    stop.stop()
                }
                for index in 0..<count { desk.leave(index) }
                dispatcher.close()
            }
            sender.start()
            let finish = FinishOnce(continuation, results: results)
            group.notify(queue: .global()) {
                housekeeping.stop()
                housekeeper.waitUntilDone()
                finish.finish()
            }
            // A stop ends the run within one `smtp.timeout` plus a margin whatever the ledger does (a send whose
            // final dot awaits its reply may take up to `smtp.dataTimeout`: cutting it short would leave the message
            // possibly delivered): threads still waiting for the ledger then are left behind, and their rows return to
            // the queue when another worker finds this one gone, or at their lease's end.
            let bound = stopGrace + Self.stopMargin
            let longest = max(stopGrace, dataTimeout) + Self.stopMargin
            let logger = logger
            Thread.named("herald-stop-bound") {
                while !finish.isFinished && !stop.wait(1) {}
                let stopped = MonotonicInstant.now()
                while !finish.wait(0.2) {
                    let waited = MonotonicInstant.now().seconds(since: stopped)
                    guard waited >= longest || (waited >= bound && inFlight.value == 0) else { continue }
                    logger.error(
                        "the worker did not finish within \(Int(waited)) s of the stop (the ledger did not answer); exiting with what it could not record: those rows return to the queue when another worker finds this one gone or their lease ends",
                        metadata: ["seconds": "\(Int(waited))", "inFlight": "\(inFlight.value)"])
                    finish.finish()
                    return
                }
            }.start()
        }
        var summary = results.summary
        summary.seconds = MonotonicInstant.now().seconds(since: started)
        return summary
    }

    /// How long past `smtp.timeout` a stop may take before the run ends without the threads still waiting.
    static let stopMargin: TimeInterval = 5

    /// What the send loop works with.
    struct SendLoop: Sendable {
        /// Names each connection's claims: `<worker id>/<index>`.
        let owners: [String]
        let watch: LedgerWatch
        let stop: StopSignal
        let desk: LedgerDesk
        /// Sends start only while this worker's heartbeats say its rows are still its own.
        let fence: ClaimFence
        /// Sends under way on every connection, for the stop's bound.
        let inFlight: InFlightCount
        /// Told when the relay begins or goes on failing a connection, and nil once it answers again: the heartbeat
        /// records it in the ledger, and `onRelayProblem` hears it.
        let relay: @Sendable (RelayProblem?) -> Void
    }

    /// One connection's state in the send loop.
    private struct Lane {
        /// Rows claimed for it, sent in order from `next`.
        var queue: [ClaimedMessage] = []
        var next = 0
        /// The sends in progress, in the order they started (and finish): up to the dispatcher's `depth`.
        var sending: [(claimed: ClaimedMessage, started: Date)] = []
        /// No more rows will come, or the worker stops.
        var finished = false
        let breaker: ConnectionBreaker
    }

    /// The send loop, on one thread for every connection: each connection with room (`MailDispatcher.depth`: a
    /// pipelining connection holds its next message while one is under way) takes its next row, the row is
    /// rendered and its send started; then one poll waits for replies on every connection at once, and each
    /// finished send goes to the desk. A connection starts a send only while its sends in progress and its
    /// outcomes awaiting recording are fewer than `worker.unrecordedPerConnection`.
    private func sendLoop(_ context: SendLoop, _ dispatcher: any MailDispatcher) throws -> WorkerSummary {
        let stop = context.stop
        let desk = context.desk
        var lanes = (0..<dispatcher.lanes).map { _ in
            Lane(breaker: ConnectionBreaker(base: connectionBackoff.base, cap: connectionBackoff.cap))
        }
        var summary = WorkerSummary()
        // Signed mail is always rendered ahead; unsigned mail when the connections leave cores idle (`RenderAhead`)
        // that no API shares.
        let renderAhead = composer.dkim != nil || (!besideAPI && dispatcher.lanes < ProcessInfo.processInfo.activeProcessorCount)
        let ahead = renderAhead ? RenderAhead(render: prepare) : nil
        /// Hands a connection's unsent rows back to the queue at once.
        func giveBack(_ lane: Int, _ rows: ArraySlice<ClaimedMessage>) throws {
            guard !rows.isEmpty else { return }
            ahead?.forget(rows)
            _ = try context.watch.run("handing back claimed rows", stop: stop, persistence: .afterStop(stopGrace)) {
                try store.release(Array(rows))
            }
            summary.released += rows.count
            desk.settled(rows.count, connection: lane)
        }
        /// Starts the connection's next send when it may.
        func startNext(_ lane: Int) throws {
            while !lanes[lane].finished && lanes[lane].sending.count < dispatcher.depth {
                if stop.isStopped {
                    try giveBack(lane, lanes[lane].queue[lanes[lane].next...])
                    (lanes[lane].queue, lanes[lane].next, lanes[lane].finished) = ([], 0, true)
                    return
                }
                if desk.hasFailed {
                    lanes[lane].finished = true  // its rows return once this worker is found gone
                    return
                }
                guard lanes[lane].breaker.pause == nil, context.fence.maySend, desk.mayStart(lane, inFlight: lanes[lane].sending.count)
                else { return }
                if lanes[lane].next == lanes[lane].queue.count {
                    switch desk.rows(lane) {
                    case .rows(let rows):
                        (lanes[lane].queue, lanes[lane].next) = (rows, 0)
                        ahead?.submit(rows)
                    case .waiting: return
                    case .finished:
                        lanes[lane].finished = true
                        return
                    }
                }
                // Ask for the next rows while a quarter of these remain, so the connection never waits for a claim.
                let left = lanes[lane].queue.count - lanes[lane].next
                if left <= max(1, lanes[lane].queue.count / 4) { desk.ask(lane) }
                let claimed = lanes[lane].queue[lanes[lane].next]
                lanes[lane].next += 1
                if claimed.claimedAt.addingTimeInterval(policy.lease).timeIntervalSinceNow < leaseMargin {
                    // The lease is nearly over (another worker may soon take the row): hand it back unsent.
                    try giveBack(lane, [claimed])
                    continue
                }
                let started = Date()
                switch ahead?.take(claimed) ?? prepare(claimed) {
                case .success(let composed):
                    rateLimiter?.acquire()
                    dispatcher.start(lane: lane, from: composed.envelopeFrom, to: [composed.recipient], message: composed.bytes)
                    lanes[lane].sending.append((claimed, started))
                    context.inFlight.add(1)
                case .failure(let error):
                    // An unavailable ledger (reading a campaign's templates) defers the row; anything else is for good.
                    let outcome: DeliveryResult.Outcome = error.code == .unavailable ? .transient : .permanent
                    let result = DeliveryResult(outcome: outcome, replyCode: nil, replyText: "could not build the message: \(error)")
                    try finish(lane, claimed, started, result)
                }
            }
        }
        /// Hands a finished send to the desk; a connection failure (or silence after a final dot) pauses the connection
        /// and returns its rows.
        func finish(_ lane: Int, _ claimed: ClaimedMessage, _ started: Date, _ result: DeliveryResult) throws {
            // Nothing of it left (it waited behind a send whose connection failed): back to the queue, unrecorded.
            if result.outcome == .unsent { return try giveBack(lane, [claimed]) }
            var pause: TimeInterval?
            var result = result
            if result.outcome == .connection && FileDescriptors.exhausted() {
                // Not the relay's doing: a socket could not even be opened.
                result = DeliveryResult(outcome: .connection, replyCode: nil, replyText: "\(FileDescriptors.exhaustion) (\(result.replyText))")
            }
            if result.outcome == .connection || result.outcome == .possiblyDelivered {
                pause = lanes[lane].breaker.failed(result.replyText)
                if result.outcome == .connection, let since = lanes[lane].breaker.outageBegan {
                    context.relay(RelayProblem(reason: result.replyText, since: since))
                }
            } else if let outage = lanes[lane].breaker.succeeded() {
                let seconds = String(format: "%.1f", Date().timeIntervalSince(outage.since))
                logger.info(
                    "SMTP connection recovered after \(seconds) s (\(outage.failures) failed attempt(s))",
                    metadata: ["seconds": "\(seconds)", "failures": "\(outage.failures)"])
                context.relay(nil)
            }
            let outcome = Outcome(claimed: claimed, result: result, startedAt: started, finishedAt: Date(), pause: pause)
            // False only when the desk failed; the unrecorded row returns when this worker is found gone.
            guard desk.hand(outcome, from: lane) else {
                lanes[lane].finished = true
                return
            }
            if let pause {
                let problem = RelayProblem(reason: result.replyText, since: Date())
                let what = problem.isConfiguration ? "the SMTP relay refuses Herald's configuration" : "SMTP connection failed"
                logger.log(
                    level: problem.isConfiguration ? .error : .warning,
                    "\(what); waiting for the server: this connection pauses \(String(format: "%.1f", pause)) s",
                    metadata: ["reply": "\(problem)", "connection": "\(context.owners[lane])"])
                try giveBack(lane, lanes[lane].queue[lanes[lane].next...])
                (lanes[lane].queue, lanes[lane].next) = ([], 0)
            }
        }
        /// Given up for dead by another worker: every row held and not yet started goes (it is back in the queue, and
        /// `release` changes only rows this worker still holds).
        func letGo() throws {
            for lane in lanes.indices {
                try giveBack(lane, lanes[lane].queue[lanes[lane].next...])
                (lanes[lane].queue, lanes[lane].next) = ([], 0)
            }
            for (lane, rows) in desk.forgetClaims() { try giveBack(lane, rows[...]) }
            context.fence.letGo()
        }
        while true {
            if context.fence.mustLetGo { try letGo() }
            for lane in lanes.indices { try startNext(lane) }
            if lanes.allSatisfy({ $0.finished && $0.sending.isEmpty }) { break }
            // Replies, a wake-up from the desk, the end of a pause, or a look at the stop signal, whichever is first.
            let pauseEnds = lanes.compactMap { $0.sending.isEmpty && !$0.finished ? $0.breaker.pause?.until : nil }.min()
            let timeout = min(0.2, max(0.001, pauseEnds?.secondsFromNow ?? 0.2))
            for (lane, result) in dispatcher.poll(timeout: timeout) {
                guard !lanes[lane].sending.isEmpty else { continue }
                let (claimed, started) = lanes[lane].sending.removeFirst()
                context.inFlight.add(-1)
                try finish(lane, claimed, started, result)
            }
        }
        desk.flush()
        summary.connections = dispatcher.connectionsOpened
        return summary
    }

    /// A finished send waiting to be recorded.
    struct Outcome: Sendable {
        let claimed: ClaimedMessage
        let result: DeliveryResult
        let startedAt: Date
        let finishedAt: Date
        /// Set when the connection failed: the connection pauses this long, and a connection-level failure's row goes
        /// back uncharged, due after it.
        let pause: TimeInterval?
    }

    /// Renders a claimed row; a failure becomes a permanent failure of that row, not of the worker.
    func prepare(_ claimed: ClaimedMessage) -> Result<MessageComposer.Composed, HeraldError> {
        let message = claimed.message
        let now = Date()
        do {
            let base = templateOverrides.composer(base: composer, store: store)
            let composer = try campaignComposers.composer(for: message, base: base, store: store)
            let input = MessageComposer.input(for: message, code: claimed.code.plaintext, typedCode: claimed.typedCode?.value, date: now)
            let composed = try composer.compose(input)
            return .success(composed)
        } catch let error as HeraldError {
            return .failure(error)
        } catch {
            return .failure(HeraldError(.templateError, "\(error)"))
        }
    }

    /// Decides the row's next state from a send's outcome, counting it in `summary`.
    func decide(_ outcome: Outcome, summary: inout WorkerSummary) -> DeliveryRecord {
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
        case .connection, .unsent:  // `finish` hands unsent rows back itself: they never reach the desk
            decision = .returned(until: outcome.finishedAt.addingTimeInterval(outcome.pause ?? connectionBackoff.base))
            summary.returned += 1
        case .possiblyDelivered:
            // The server may have it: resent only while few copies have gone, and never past the attempts.
            let resend = message.possiblyDelivered < maxUncertainRetries && message.attempts < policy.maxAttempts
            let retryAt = resend ? Date().addingTimeInterval(retry.delay(afterAttempt: message.attempts)) : nil
            decision = .possiblyDelivered(retryAt: retryAt)
            summary.possiblyDelivered += 1
        case .transient where message.attempts >= policy.maxAttempts:
            decision = .dead
            summary.dead += 1
        case .transient:
            decision = .deferred(until: Date().addingTimeInterval(retry.delay(afterAttempt: message.attempts)))
            summary.deferred += 1
        }
        return DeliveryRecord(
            decision: decision, replyCode: result.replyCode, replyText: result.replyText, startedAt: outcome.startedAt,
            finishedAt: outcome.finishedAt)
    }

    /// Logs a recorded outcome.
    func log(_ outcome: Outcome, _ record: DeliveryRecord) {
        let message = outcome.claimed.message
        let result = outcome.result
        switch record.decision {
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
        case .possiblyDelivered(let retryAt?):
            logger.warning(
                "possibly delivered: no reply to the end of data; sent again (it may arrive twice)",
                metadata: metadata(message, result, ["retryAt": "\(retryAt)"]))
        case .possiblyDelivered(nil):
            logger.error("possibly delivered: no reply to the end of data; not sent again", metadata: metadata(message, result))
        }
    }

    private func metadata(_ message: OutboxMessage, _ result: DeliveryResult, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        [
            "outbox": "\(message.id)", "action": "\(message.kind.rawValue)", "attempt": "\(message.attempts)",
            "reply": "\(result.replyText)",
        ].merging(extra) { _, new in new }
    }
}

/// How many sends are under way, counted by the send loop and read by the stop's bound.
final class InFlightCount: Sendable {
    private let count = Mutex(0)

    func add(_ delta: Int) { count.withLock { $0 += delta } }

    var value: Int { count.withLock { $0 } }
}

/// Resumes `Worker.run`'s continuation once: when every thread is done, or when a stop outlasted its bound.
/// `@unchecked Sendable`: guarded by `condition`'s lock.
private final class FinishOnce: @unchecked Sendable {
    private let condition = MonotonicCondition()
    private var continuation: CheckedContinuation<Void, any Error>?
    private let results: ThreadResults

    init(_ continuation: CheckedContinuation<Void, any Error>, results: ThreadResults) {
        self.continuation = continuation
        self.results = results
    }

    var isFinished: Bool { condition.withLock { continuation == nil } }

    func finish() {
        let pending = condition.withLock { () -> CheckedContinuation<Void, any Error>? in
            defer {
                continuation = nil
                condition.broadcast()
            }
            return continuation
        }
        guard let pending else { return }
        if let error = results.error { pending.resume(throwing: error) } else { pending.resume() }
    }

    /// Waits up to `seconds` for `finish()`; true if it came.
    func wait(_ seconds: TimeInterval) -> Bool {
        condition.withLock {
            let deadline = MonotonicInstant.now().adding(seconds)
            while continuation != nil && condition.wait(until: deadline) {}
            return continuation == nil
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
