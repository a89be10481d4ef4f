import Foundation
import HeraldCore
import HeraldStore

/// Redeeming codes: inspecting one, a page's click, and each action's redemption with its effect (or, when the
/// app owns the accounts, the redemption alone), every outcome recorded with the visitor.
///
/// ```swift
/// let account = try actions.redemption.resetPassword(code: code, newPassword: "correct horse", visitor: visitor)
/// ```
public final class RedemptionService: Sendable, AccountOwnership {
    let store: any HeraldStore
    /// Whether Herald stores the accounts (`accounts.owner: herald`).
    public let ownsAccounts: Bool
    /// Starts the session of an email-link sign-in, and verifies the ID token of one that links.
    let sessions: SessionsService
    /// A used code leaves the emulator's listing.
    let codes: ListedCodes
    /// Attempts with codes that do not exist, per client network (`limits.ipBadCodesPerMinute`).
    let badCodeLimiter: ClientLimiter
    /// Binds an action page's form to its code.
    let forms: FormSigner
    /// The key typed codes are checked under; nil when `policy.typedCodes` is off.
    let typedCodes: TypedCodeKey?
    /// Wrong tries a typed code survives (`policy.typedCodeTries`).
    let typedCodeTries: Int
    /// Wrong typed codes per address and per client network, counted with failed password sign-ins' limits.
    let typedFailures: (account: ClientLimiter, client: ClientLimiter)
    let refusals: RefusalCounter

    init(_ parts: ServiceParts, forms: FormSigner, typedCodes: TypedCodeKey?) {
        store = parts.store
        ownsAccounts = parts.ownsAccounts
        sessions = parts.sessions
        codes = parts.codes
        badCodeLimiter = parts.limiters.badCode
        self.forms = forms
        self.typedCodes = typedCodes
        typedCodeTries = parts.configuration.policy.typedCodeTries
        typedFailures = (parts.limiters.accountFailures, parts.limiters.clientFailures)
        refusals = parts.refusals
    }
}
