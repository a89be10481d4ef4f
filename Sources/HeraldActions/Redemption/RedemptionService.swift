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

    init(_ parts: ServiceParts, forms: FormSigner) {
        store = parts.store
        ownsAccounts = parts.ownsAccounts
        sessions = parts.sessions
        codes = parts.codes
        badCodeLimiter = parts.limiters.badCode
        self.forms = forms
    }
}
