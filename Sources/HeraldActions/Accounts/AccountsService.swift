import Foundation
import HeraldCore
import HeraldStore
import Logging

/// Accounts and credentials, when Herald owns the accounts (`accounts.owner: herald`): sign-ups, password
/// sign-ins, an administrator's lookups and edits, and a signed-in user's changes to their own account.
///
/// ```swift
/// let account = try actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .admin)
/// ```
public final class AccountsService: Sendable, AccountOwnership {
    public typealias Caller = Actions.Caller

    let store: any HeraldStore
    /// Whether Herald stores the accounts (`accounts.owner: herald`).
    public let ownsAccounts: Bool
    let server: HeraldConfiguration.Server
    let limits: HeraldConfiguration.Limits
    let links: HeraldConfiguration.Links
    /// The right-hand side of every Message-ID: the sender's domain.
    let messageDomain: String
    let sessions: SessionsService
    let refusals: RefusalCounter
    /// The recovery link of an email change, in emulator mode.
    let codes: ListedCodes
    /// Signalled when an email change queues its recovery notice.
    let queued: QueueSignal
    /// App sign-ups per client network (`limits.ipSignUpsPerHour`).
    let signUpLimiter: ClientLimiter
    /// Failed password sign-ins per account address and per client network: password guessing.
    let accountFailures: ClientLimiter
    let clientFailures: ClientLimiter
    let logger: Logger

    init(_ parts: ServiceParts) {
        store = parts.store
        ownsAccounts = parts.ownsAccounts
        server = parts.configuration.server
        limits = parts.configuration.limits
        links = parts.configuration.links
        messageDomain = parts.messageDomain
        sessions = parts.sessions
        refusals = parts.refusals
        codes = parts.codes
        queued = parts.queued
        signUpLimiter = parts.limiters.signUp
        accountFailures = parts.limiters.accountFailures
        clientFailures = parts.limiters.clientFailures
        logger = parts.logger
    }
}
