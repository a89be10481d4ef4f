import Foundation
import HeraldCore
import HeraldStore

/// Sending actions: the rules every request passes (validation, the account rules, the suppression list,
/// enumeration protection, the abuse limits, cooldown and daily cap) before the outbox; bulk sends; retrying
/// and cancelling what the outbox holds.
///
/// `herald send`, each campaign row and `accounts:sendOobCode` go through these rules and get the same answer
/// for the same request.
///
/// ```swift
/// let sent = try actions.sending.send(SendRequest(kind: .resetPassword, email: "ada@example.com"), as: .admin)
/// ```
public final class SendingService: Sendable, AccountOwnership {
    public typealias Caller = Actions.Caller

    let store: any HeraldStore
    /// Whether Herald stores the accounts (`accounts.owner: herald`).
    public let ownsAccounts: Bool
    let links: HeraldConfiguration.Links
    let server: HeraldConfiguration.Server
    let limits: HeraldConfiguration.Limits
    let policy: HeraldConfiguration.Policy
    /// The right-hand side of every Message-ID: the sender's domain.
    let messageDomain: String
    /// Verifies the ID token an app's verification names its account by.
    let sessions: SessionsService
    let refusals: RefusalCounter
    let codes: ListedCodes
    /// App emails per client network (`limits.ipSendsPerMinute`, `ipBurst`, `ipSendsPerHour`).
    let sendLimiter: ClientLimiter
    /// Recent latencies of real app sends, which silent answers match.
    let latencies = LatencyMatcher()
    /// Signalled after every commit that queued mail, so a worker in this process claims it at once.
    let queued: QueueSignal

    init(_ parts: ServiceParts) {
        store = parts.store
        ownsAccounts = parts.ownsAccounts
        links = parts.configuration.links
        server = parts.configuration.server
        limits = parts.configuration.limits
        policy = parts.configuration.policy
        messageDomain = parts.messageDomain
        sessions = parts.sessions
        refusals = parts.refusals
        codes = parts.codes
        sendLimiter = parts.limiters.send
        queued = parts.queued
    }
}
