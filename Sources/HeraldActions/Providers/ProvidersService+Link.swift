import Foundation
import HeraldCore
import HeraldStore

/// A provider user to link to an account as stated, with no assertion from the provider: `accounts:update`'s
/// `linkProviderUserInfo` (the Node Admin SDK's `updateUser(uid, {providerToLink})`).
public struct ProviderLink: Sendable, Hashable {
    public var providerId: String?
    public var rawId: String?
    public var email: String?
    public var displayName: String?
    public var photoURL: String?
    public var screenName: String?

    public init(
        providerId: String?, rawId: String?, email: String? = nil, displayName: String? = nil, photoURL: String? = nil,
        screenName: String? = nil
    ) {
        self.providerId = providerId
        self.rawId = rawId
        self.email = email
        self.displayName = displayName
        self.photoURL = photoURL
        self.screenName = screenName
    }
}

extension ProvidersService {
    /// Links a provider user to the account `uid` by the rules of an app's link (`IdpDecision`): the identity must be
    /// free, the account must have no other user of that provider, and no other account may have the identity's email.
    /// Nothing vouches for the email, so it proves nothing.
    ///
    /// Production takes `linkProviderUserInfo` from administrators only; the Firebase emulator also from the account's
    /// own user (`idToken`), which Herald allows in emulator mode only.
    /// - Throws: `MISSING_PROVIDER_ID`, `MISSING_RAW_ID`, `INSUFFICIENT_PERMISSION`, `USER_NOT_FOUND`, `USER_DISABLED`,
    ///   `FEDERATED_USER_ID_ALREADY_LINKED`, `EMAIL_EXISTS`.
    public func linkProvider(
        _ link: ProviderLink, to uid: String, byAdministrator: Bool, visitor: Visitor, now: Date = Date()
    ) async throws -> Account {
        try requireAccountOwnership("update")
        guard let providerId = link.providerId, !providerId.isEmpty else { throw HeraldError(.missingProviderID, "") }
        guard let rawId = link.rawId, !rawId.isEmpty else { throw HeraldError(.missingRawID, "") }
        guard byAdministrator || emulatorMode else {
            throw HeraldError(.insufficientPermission, "linkProviderUserInfo needs admin credentials")
        }
        let email = try link.email.map { try EmailAddress($0).value }
        let identity = FederatedIdentity(
            providerId: providerId, rawId: rawId, email: email, displayName: link.displayName, photoURL: link.photoURL,
            screenName: link.screenName)
        let store = store
        let outcome = try await offload {
            try store.signIn(with: identity, linking: uid, trusted: false, visitor: visitor, now: now)
        }
        return outcome.account
    }
}
