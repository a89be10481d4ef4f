import HeraldActions
import HeraldCore
import Hummingbird

extension IdentityToolkitController {
    /// `accounts:signUp`: an app creates an account with email and password, and is signed in.
    @Sendable func signUp(_ request: Request, context: HeraldRequestContext) async throws -> SessionReply {
        let body = try await request.decode(as: SignUpBody.self, context: context)
        let (actions, signUp) = (actions, body.request)
        let result = try await offload { try actions.signUp(signUp, as: .app) }
        guard let session = result.session else { throw FirebaseError.internalError }  // an app sign-up always signs in
        return SessionReply(kind: SignUpBody.kind, session)
    }

    /// `projects/{p}/accounts`: an administrator creates an account.
    @Sendable func create(_ request: Request, context: HeraldRequestContext) async throws -> CreatedAccountReply {
        try context.requireAdmin()
        let body = try await request.decode(as: SignUpBody.self, context: context)
        let (actions, signUp) = (actions, body.request)
        let result = try await offload { try actions.signUp(signUp, as: .admin) }
        return CreatedAccountReply(localId: result.account.uid, email: result.account.email ?? "")
    }

    /// `accounts:signInWithPassword`.
    @Sendable func signInWithPassword(_ request: Request, context: HeraldRequestContext) async throws -> SessionReply {
        let body = try await request.decode(as: SignInWithPasswordBody.self, context: context)
        let actions = actions
        let session = try await offload { try actions.signInWithPassword(email: body.email, password: body.password) }
        return SessionReply(kind: "identitytoolkit#VerifyPasswordResponse", session, registered: true)
    }

    /// `accounts:delete`: the caller's own account (`idToken`) or, for admins, the account `localId`.
    @Sendable func delete(_ request: Request, context: HeraldRequestContext) async throws -> DeletedAccountReply {
        let body = try await request.decode(as: DeleteAccountBody.self, context: context)
        let actions = actions
        if body.idToken == nil { try context.requireAdmin() }
        try await offload {
            guard let uid = try body.idToken.map({ try actions.account(forIDToken: $0).uid }) ?? body.localId else {
                throw HeraldError(.userNotFound, "")
            }
            try actions.deleteAccount(uid: uid)
        }
        return DeletedAccountReply()
    }
}

/// `accounts:signUp`'s and an admin create's body; `localId`, `emailVerified` and `disabled` are for admins.
struct SignUpBody: StrictDecodable {
    static let kind = "identitytoolkit#SignupNewUserResponse"

    let email: String?
    let password: String?
    let displayName: String?
    let localId: String?
    let emailVerified: Bool?
    let disabled: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable { case email, password, displayName, localId, emailVerified, disabled }

    static let ignoredFields: Set<String> = [
        "photoUrl", "phoneNumber", "returnSecureToken", "tenantId", "targetProjectId", "captchaResponse", "clientType",
        "recaptchaVersion",
    ]

    var request: SignUpRequest {
        SignUpRequest(
            email: email, password: password, displayName: displayName, localId: localId, emailVerified: emailVerified,
            disabled: disabled)
    }
}

/// An admin create's answer.
struct CreatedAccountReply: ResponseEncodable {
    let kind = SignUpBody.kind
    let localId: String
    let email: String
}

/// `accounts:signInWithPassword`'s body.
struct SignInWithPasswordBody: StrictDecodable {
    let email: String?
    let password: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case email, password }

    static let ignoredFields: Set<String> = ["returnSecureToken", "tenantId", "captchaResponse", "clientType", "recaptchaVersion"]
}

/// `accounts:delete`'s body.
struct DeleteAccountBody: StrictDecodable {
    let localId: String?
    let idToken: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case localId, idToken }

    static let ignoredFields: Set<String> = ["tenantId", "targetProjectId"]
}

/// `accounts:delete`'s answer: only the `kind`, which firebase-admin requires.
struct DeletedAccountReply: ResponseEncodable {
    let kind = "identitytoolkit#DeleteAccountResponse"
}
