import Crypto
import Foundation
import HeraldCore
import HeraldMail
import HeraldStore
import Logging
import Synchronization

/// The rulebook: every rule a request passes through, once, for every entry point.
///
/// The CLI, campaigns and the HTTP API call these functions and nothing else decides: sending an
/// action (validation, account rules, enumeration protection, cooldown and daily cap, then the
/// outbox), redeeming a code and its effect, accounts and credentials, campaign import, reports and
/// the audit. Calls block on the store, so the HTTP layer runs them off the cooperative pool (`offload`); the
/// `async` ones (`send` among them) hop to a blocking thread themselves where they must.
///
/// ```swift
/// let actions = Actions(configuration: configuration, store: store, composer: composer, testSend: delivery.deliver)
/// let sent = try actions.send(SendRequest(kind: .resetPassword, email: "ada@example.com"), as: .admin)
/// ```
public final class Actions: Sendable {
    public let configuration: HeraldConfiguration
    let store: any HeraldStore
    /// Renders template previews and the console's test messages; the worker holds its own.
    let composer: MessageComposer
    /// The right-hand side of every Message-ID: the sender's domain.
    let messageDomain: String
    /// Reads the outbox row out of a bounce's address (`bounces.domain`), as the composer wrote it.
    let verp: VERPAddress?
    /// Verifies one-click unsubscribe links (`campaigns.unsubscribeUrl`).
    let unsubscribeTokens: UnsubscribeToken?
    let links: ActionLinkBuilder
    let forms: FormSigner
    /// Seals the hosted sign-in handler's state and assertions.
    let handlerSeal: FlowSeal
    /// The ID-token keys, read (or created) on first use: commands that never sign need no key file.
    private let idTokenKeys = Mutex<IDTokens?>(nil)
    let logger: Logger
    /// Signalled after every commit that queued mail, so a worker in this process claims it at once.
    public let queued = QueueSignal()
    /// Emulator mode only: plaintext codes kept in memory (never on disk) for `GET …/oobCodes`, the newest
    /// `emulatorCodeLimit`.
    let emulatorCodes = Mutex<[EmulatorCode]>([])
    static let emulatorCodeLimit = 1000
    /// App emails per client network (`limits.ipSendsPerMinute`, `ipBurst`, `ipSendsPerHour`).
    let sendLimiter: ClientLimiter
    /// Attempts with codes that do not exist, per client network (`limits.ipBadCodesPerMinute`).
    let badCodeLimiter: ClientLimiter
    /// App sign-ups per client network (`limits.ipSignUpsPerHour`).
    let signUpLimiter: ClientLimiter
    /// Failed password sign-ins per account address (`limits.signInFailuresPerAccount`) and per client network
    /// (`limits.ipSignInFailuresPerHour`): password guessing.
    let accountFailures: ClientLimiter
    let clientFailures: ClientLimiter
    /// Wrong admin tokens at the console's sign-in form per client network (`limits.ipSignInFailuresPerHour`),
    /// apart from the users' sign-ins so neither locks the other out.
    let consoleFailures: ClientLimiter
    /// Recent latencies of real app sends, which silent answers match.
    let latencies = LatencyMatcher()
    /// The OIDC providers' signing keys.
    let jwks = JWKSCache()
    /// Refused requests on their way to the ledger's `abuse_counts`.
    let tally = AbuseTally()
    /// Takes the console's test messages to the relay now and returns its answer (the worker's `SingleDelivery`).
    let testSend: @Sendable (MessageComposer.Composed) throws -> DeliveryResult

    public init(
        configuration: HeraldConfiguration, store: any HeraldStore, composer: MessageComposer,
        testSend: @escaping @Sendable (MessageComposer.Composed) throws -> DeliveryResult, logger: Logger = Logger(label: "herald")
    ) {
        self.configuration = configuration
        self.store = store
        self.composer = composer
        self.testSend = testSend
        messageDomain = String(composer.from.address.domain)
        verp = composer.verp
        unsubscribeTokens = composer.unsubscribeTokens
        links = ActionLinkBuilder(actionURL: configuration.links.actionURL, apiKey: configuration.project.apiKey)
        let secret = configuration.server.tokenSecret
        let key = secret.isEmpty ? SymmetricKey(size: .bits256) : SymmetricKey(data: SHA256.hash(data: Data(secret.utf8)))
        forms = FormSigner(key: key)
        handlerSeal = FlowSeal(serverKey: key)
        self.logger = logger
        let limits = configuration.limits
        sendLimiter = ClientLimiter(rules: [
            .init(capacity: limits.ipBurst, perMinute: limits.ipSendsPerMinute),
            .init(capacity: limits.ipSendsPerHour, perHour: limits.ipSendsPerHour),
        ])
        badCodeLimiter = ClientLimiter(rules: [.init(capacity: limits.ipBadCodesPerMinute, perMinute: limits.ipBadCodesPerMinute)])
        signUpLimiter = ClientLimiter(rules: [.init(capacity: limits.ipSignUpsPerHour, perHour: limits.ipSignUpsPerHour)])
        // N failures in a row, then one more every quarter of an hour.
        accountFailures = ClientLimiter(
            rules: [.init(capacity: limits.signInFailuresPerAccount, perHour: 4)], keyed: .verbatim)
        clientFailures = ClientLimiter(rules: [.init(capacity: limits.ipSignInFailuresPerHour, perHour: limits.ipSignInFailuresPerHour)])
        consoleFailures = ClientLimiter(
            rules: [.init(capacity: limits.ipSignInFailuresPerHour, perHour: limits.ipSignInFailuresPerHour)], keyed: .verbatim)
    }

    /// The keys that sign and verify ID tokens, from `tokens.keyFile` (created with a fresh key when absent).
    /// `herald serve` calls this at start-up, so a bad key file stops it before it listens.
    ///
    /// - Throws: `INVALID_CONFIGURATION` for a key file that cannot be read, written or parsed.
    @discardableResult
    public func idTokens() throws -> IDTokens {
        try idTokenKeys.withLock { keys in
            if let keys { return keys }
            let file = try SigningKeyFile.openOrCreate(path: configuration.signingKeyPath)
            let loaded = try IDTokens(file: file, projectID: configuration.project.id)
            keys = loaded
            return loaded
        }
    }

    /// Who is asking: an app with the API key (enumeration protection applies) or an administrator
    /// (the CLI, campaigns, admin API calls), who sees the true error.
    public enum Caller: Sendable, Hashable { case app, admin }

    /// Whether Herald stores the accounts (`accounts.owner: herald`).
    public var ownsAccounts: Bool { configuration.accounts.owner == .herald }

    /// - Throws: `OPERATION_NOT_ALLOWED` when the app owns the accounts.
    func requireAccountOwnership(_ operation: String) throws {
        guard ownsAccounts else {
            throw HeraldError(
                .operationNotAllowed,
                "\(operation) needs Herald to own the accounts, but accounts.owner is app (the app redeems codes with codes:redeem)")
        }
    }
}

/// A code minted in emulator mode, as `GET /emulator/v1/projects/{p}/oobCodes` lists it.
public struct EmulatorCode: Sendable, Hashable {
    public let email: String
    public let newEmail: String?
    public let oobCode: String
    public let oobLink: String
    public let requestType: String
}
