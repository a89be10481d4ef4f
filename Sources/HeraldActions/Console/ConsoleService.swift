import Foundation
import HeraldCore
import HeraldMail
import HeraldStore

/// What the `/admin` console reads and does beyond the reports: message search and history, recent
/// sends, the workers' status, template previews and test messages.
///
/// ```swift
/// let failed = try actions.console.searchMessages(MessageSearch(state: .failed), limit: 50)
/// ```
public final class ConsoleService: Sendable {
    let store: any HeraldStore
    /// The whole configuration: the console reads the admin token, the workers' heartbeat timeout and the links.
    let configuration: HeraldConfiguration
    /// Renders template previews and test messages; the worker holds its own.
    let composer: MessageComposer
    /// Takes a test message to the relay now and returns its answer (the worker's `SingleDelivery`).
    let testSend: @Sendable (MessageComposer.Composed) throws -> DeliveryResult

    init(
        _ parts: ServiceParts, composer: MessageComposer, testSend: @escaping @Sendable (MessageComposer.Composed) throws -> DeliveryResult
    ) {
        store = parts.store
        configuration = parts.configuration
        self.composer = composer
        self.testSend = testSend
    }
}

extension ConsoleService {
    /// Outbox rows matching `search`, newest first, at most `limit`.
    public func searchMessages(_ search: MessageSearch, limit: Int = 200) throws -> [OutboxMessage] {
        try store.searchMessages(search, limit: max(1, min(limit, 10_000)))
    }

    /// One row's history: queued, attempts with SMTP replies, retries and cancels, clicks and redemptions,
    /// bounces and complaints. - Throws: `NOT_FOUND`.
    public func messageHistory(id: Int64) throws -> MessageHistory {
        guard let history = try store.history(outboxID: id) else { throw HeraldError(.notFound, "no message \(id)") }
        return history
    }

    /// The workers that have not stopped, each with whether it beat within `worker.heartbeatTimeout`, and the
    /// queue's pending count and next due time: whether anything is sending what waits.
    public func workerStatus(now: Date = Date()) throws -> (workers: [LiveWorker], queue: QueueStatus) {
        let timeout = configuration.worker.heartbeatTimeout
        let workers = try store.liveWorkers(now: now).map { worker in
            LiveWorker(
                host: worker.host, pid: worker.pid, startedAt: worker.startedAt, heartbeatAt: worker.heartbeatAt,
                alive: worker.heartbeatAge <= timeout,
                relayProblem: worker.relayProblem.map(\.sinceDescription))
        }
        return (workers, try store.queueStatus())
    }

    /// Every action with the locales it has templates for.
    public var templateLocales: [(kind: ActionKind, locales: [LocaleTag])] {
        ActionKind.allCases.map { kind in (kind, composer.templates.locales(of: kind)) }
    }

    /// The subject and bodies of an action in a locale, with sample data, as the worker renders them now (the newest
    /// revisions edited in the console over the files).
    public func preview(_ kind: ActionKind, locale: LocaleTag) throws -> RenderedContent {
        let composer = try currentComposer()
        return composer.content(try composer.sampleInput(kind, locale: locale, links: configuration.links))
    }

    /// Sends the sample message of an action in a locale to `recipient` through the configured relay, on one
    /// short-lived connection (`testSend`: the worker's way to SMTP), and returns the relay's answer. Nothing
    /// enters the outbox: the message carries no working link. Addresses suppressed for all mail are refused.
    ///
    /// - Throws: `INVALID_EMAIL`; `RECIPIENT_SUPPRESSED` naming the reason.
    public func sendTemplateTest(
        _ kind: ActionKind, locale: LocaleTag, to recipient: String
    ) throws -> DeliveryResult {
        let address = try EmailAddress(recipient)
        if let suppression = try store.suppressions(emails: [address.value])[address.value], suppression.stops(campaign: false) {
            throw HeraldError(.recipientSuppressed, "\(address.value) is suppressed (\(suppression.reason.rawValue))")
        }
        let composer = try currentComposer()
        let composed = try composer.compose(try composer.sampleInput(kind, locale: locale, links: configuration.links, to: address))
        return try testSend(composed)
    }
}

extension ConsoleService {
    /// Appends a change made in the console to the ledger's action log.
    public func record(_ action: ConsoleAction) throws {
        try store.recordConsoleAction(action)
    }

    /// The action log, newest first (`herald console activity`, `/admin/console/activity`).
    public func actions(_ query: ConsoleActionQuery) throws -> [ConsoleAction] {
        try store.consoleActions(query)
    }
}

/// A worker that has not stopped, as the console shows it.
public struct LiveWorker: Sendable, Hashable {
    public let host: String
    public let pid: Int32
    public let startedAt: Date
    public let heartbeatAt: Date
    /// Whether it beat within `worker.heartbeatTimeout`.
    public let alive: Bool
    /// Why the SMTP relay fails its connections and since when, as of its last heartbeat; nil while it does not.
    public let relayProblem: String?
}

extension LiveWorker {
    /// What keeps queued mail from going, in one line for `campaign watch` and the console: no live worker, or the
    /// relay failing the live ones; nil when neither.
    public static func obstacle(_ workers: [LiveWorker], pending: Int) -> String? {
        let alive = workers.filter(\.alive)
        if pending > 0, alive.isEmpty { return "no worker is alive: start herald worker (or herald serve)" }
        return alive.compactMap(\.relayProblem).first.map { "the SMTP relay fails: \($0)" }
    }
}
