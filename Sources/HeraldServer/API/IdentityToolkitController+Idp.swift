import HeraldActions
import HeraldCore
import Hummingbird

extension IdentityToolkitController {
    /// `accounts:signInWithIdp` (v3 `verifyAssertion`): sign in or link with an identity provider.
    @Sendable func signInWithIdp(_ request: Request, context: HeraldRequestContext) async throws -> IdpReply {
        let body = try await request.decode(as: SignInWithIdpBody.self, context: context)
        guard body.requestUri?.isEmpty == false else { throw HeraldError(.missingRequestURI, "") }
        let result = try await providers.signInWithIdp(
            IdpSignInRequest(
                postBody: body.postBody, requestUri: body.requestUri, idToken: body.idToken, sessionId: body.sessionId,
                visitor: context.visitor(of: request), returnIdpCredential: body.returnIdpCredential ?? false))
        return IdpReply(result, hidingAccount: configuration.server.enumerationProtection)
    }
}

/// `accounts:signInWithIdp`'s body, as the SDKs send it.
struct SignInWithIdpBody: StrictDecodable {
    let requestUri: String?
    let postBody: String?
    let idToken: String?
    let sessionId: String?
    let returnIdpCredential: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable { case requestUri, postBody, idToken, sessionId, returnIdpCredential }

    static let ignoredFields: Set<String> = [
        "returnSecureToken", "returnRefreshToken", "pendingToken", "autoCreate", "tenantId",
        "pendingIdToken", "delegatedProjectNumber", "tenantProjectNumber",
    ]
}

/// Firebase's `VerifyAssertionResponse`. `needConfirmation` and `isNewUser` appear only when true (the JS SDK
/// takes the mere presence of `needConfirmation` as the error); the provider's credential is echoed, which the
/// iOS SDK needs to build the credential it hands back with `accountExistsWithDifferentCredential`. A link refused
/// under `returnIdpCredential` is `errorMessage` beside the credential, with no account and no tokens.
struct IdpReply: ResponseEncodable {
    let kind = "identitytoolkit#VerifyAssertionResponse"
    let providerId: String
    /// Google's users as `https://accounts.google.com/<id>`, as Firebase answers; other providers' by their id.
    let federatedId: String
    /// Absent from a `needConfirmation` answer under enumeration protection, with the account's verification state and
    /// providers: the answer then says only that the user must sign in another way, nothing about the account.
    let localId: String?
    let email: String?
    let emailVerified: Bool
    let displayName: String?
    let fullName: String?
    let firstName: String?
    let lastName: String?
    let photoUrl: String?
    let screenName: String?
    let rawUserInfo: String
    let oauthIdToken: String?
    let oauthAccessToken: String?
    let oauthTokenSecret: String?
    let needConfirmation: Bool?
    let verifiedProvider: [String]?
    let errorMessage: String?
    let isNewUser: Bool?
    let idToken: String?
    let refreshToken: String?
    let expiresIn: String?

    init(_ result: IdpSignInResult, hidingAccount: Bool) {
        let identity = result.identity
        let needsConfirmation = result.outcome?.needsConfirmation ?? false
        // A refused link names no account; under enumeration protection neither does `needConfirmation`.
        let account = hidingAccount && needsConfirmation ? nil : result.outcome?.account
        providerId = identity.providerId
        federatedId = identity.providerId == "google.com" ? "https://accounts.google.com/\(identity.rawId)" : identity.rawId
        localId = account?.uid
        email = identity.email
        emailVerified =
            if let account, identity.email != nil, identity.email == account.email { account.emailVerified } else { identity.emailVerified }
        displayName = identity.displayName
        fullName = identity.displayName
        firstName = result.profile.firstName
        lastName = result.profile.lastName
        photoUrl = identity.photoURL
        screenName = identity.screenName
        rawUserInfo = result.profile.rawUserInfo
        oauthIdToken = result.assertion.idToken
        oauthAccessToken = result.assertion.accessToken
        oauthTokenSecret = result.assertion.oauthTokenSecret
        needConfirmation = needsConfirmation ? true : nil
        verifiedProvider = needsConfirmation ? account?.providers.filter { $0 != "password" && $0 != "phone" } : nil
        errorMessage = result.refusal?.description
        isNewUser = result.outcome?.isNewUser == true ? true : nil
        idToken = result.session?.idToken
        refreshToken = result.session?.refreshToken
        expiresIn = result.session?.expiresIn
    }
}
