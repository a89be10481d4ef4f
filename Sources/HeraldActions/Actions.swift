import Crypto
import Foundation
import HeraldCore
import HeraldMail
import HeraldStore
import Logging

/// The rulebook: every rule a request passes through, once, for every entry point, as a few services that
/// each hold only what they use.
///
/// The CLI, campaigns and the HTTP API call these services and nothing else decides: `sending` (validation,
/// account rules, enumeration protection, cooldown and daily cap, then the outbox), `redemption` (a code and
/// its effect), `accounts` and `sessions` (accounts, credentials, ID and refresh tokens), `providers`
/// (identity-provider sign-ins and the hosted handler), `campaigns`, `reports`, `feedback` (bounces,
/// unsubscribes, the suppression list), `webhooks` and `console`. This root only builds them, with the pieces
/// several share (the abuse limiters, the refusal counter, the queue signal, the listed codes). Calls block on
/// the store, so the HTTP layer runs them off the cooperative pool (`offload`); the `async` ones (`send`
/// among them) hop to a blocking thread themselves where they must.
///
/// ```swift
/// let actions = Actions(configuration: configuration, store: store, composer: composer, testSend: delivery.deliver)
/// let sent = try actions.sending.send(SendRequest(kind: .resetPassword, email: "ada@example.com"), as: .admin)
/// ```
public final class Actions: Sendable {
    public let configuration: HeraldConfiguration
    /// Signalled after every commit that queued mail, so a worker in this process claims it at once.
    public let queued: QueueSignal
    /// Refused requests on their way to the ledger's `abuse_counts`.
    public let refusals: RefusalCounter
    public let sessions: SessionsService
    public let sending: SendingService
    public let redemption: RedemptionService
    public let accounts: AccountsService
    public let providers: ProvidersService
    public let campaigns: CampaignsService
    public let reports: ReportsService
    public let feedback: FeedbackService
    public let webhooks: WebhooksService
    public let console: ConsoleService
    /// The admin token, for admin calls and the console's sign-in.
    public let adminToken: AdminTokenCheck
    /// Whether the ledger takes writes (`/health` asks while requests find it unavailable).
    public let ledger: any LedgerProbe

    public init(
        configuration: HeraldConfiguration, store: any HeraldStore, composer: MessageComposer,
        testSend: @escaping @Sendable (MessageComposer.Composed) throws -> DeliveryResult, logger: Logger = Logger(label: "herald")
    ) {
        self.configuration = configuration
        let queued = QueueSignal()
        let refusals = RefusalCounter(store: store, logger: logger)
        let sessions = SessionsService(configuration: configuration, store: store)
        let links = ActionLinkBuilder(actionURL: configuration.links.actionURL, apiKey: configuration.project.apiKey)
        let limiters = ClientLimiters(configuration.limits)
        let parts = ServiceParts(
            configuration: configuration, store: store, messageDomain: String(composer.from.address.domain), logger: logger,
            queued: queued, refusals: refusals, sessions: sessions, limiters: limiters,
            codes: ListedCodes(store: store, links: links, configuration: configuration))
        let secret = configuration.server.tokenSecret
        let key = secret.isEmpty ? SymmetricKey(size: .bits256) : SymmetricKey(data: SHA256.hash(data: Data(secret.utf8)))
        self.queued = queued
        self.refusals = refusals
        self.sessions = sessions
        sending = SendingService(parts)
        redemption = RedemptionService(parts, forms: FormSigner(key: key), typedCodes: composer.typedCodeKey)
        accounts = AccountsService(parts)
        providers = ProvidersService(parts, handlerSeal: FlowSeal(serverKey: key))
        campaigns = CampaignsService(parts, composer: composer)
        reports = ReportsService(store: store)
        feedback = FeedbackService(parts, composer: composer)
        webhooks = WebhooksService(store: store, configuration: configuration.webhooks)
        console = ConsoleService(parts, composer: composer, testSend: testSend)
        adminToken = AdminTokenCheck(
            token: configuration.server.adminToken, failures: limiters.adminTokenFailures, refusals: refusals)
        ledger = store
    }

    /// Who is asking: an app with the API key (enumeration protection applies) or an administrator
    /// (the CLI, campaigns, admin API calls), who sees the true error.
    public enum Caller: Sendable, Hashable { case app, admin }
}

/// What the services are built from: the store, the configuration, and the pieces several of them share (each
/// built once, by `Actions`).
struct ServiceParts {
    let configuration: HeraldConfiguration
    let store: any HeraldStore
    /// The right-hand side of every Message-ID: the sender's domain.
    let messageDomain: String
    let logger: Logger
    let queued: QueueSignal
    let refusals: RefusalCounter
    let sessions: SessionsService
    let limiters: ClientLimiters
    let codes: ListedCodes

    /// Whether Herald stores the accounts (`accounts.owner: herald`).
    var ownsAccounts: Bool { configuration.accounts.owner == .herald }
}
