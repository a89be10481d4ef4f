import HeraldActions
import HeraldCore
import Hummingbird

extension IdentityToolkitController {
    /// `accounts:signUp`: an app creates an account with email and password, and is signed in.
    @Sendable func signUp(_ request: Request, context: HeraldRequestContext) async throws -> SessionReply {
        let body = try await request.decode(as: SignUpBody.self, context: context)
        let signUp = body.request
        if let idToken = body.idToken {
            // The SDKs' "link an email and password to the signed-in user".
            var edit = ProfileEdit()
            edit.email = body.email
            edit.password = body.password
            edit.displayName = body.displayName
            edit.returnSecureToken = true
            guard body.email != nil else { throw HeraldError(.missingEmail, "") }
            guard body.password != nil else { throw HeraldError(.missingPassword, "") }
            let update = try await accounts.updateOwnAccount(idToken: idToken, edit)
            guard let session = update.session else { throw FirebaseError.internalError }  // returnSecureToken always signs in
            return SessionReply(kind: SignUpBody.kind, session, displayName: update.account.displayName)
        }
        let result = try await accounts.signUp(signUp, as: .app, clientIP: context.clientIP)
        guard let session = result.session else { throw FirebaseError.internalError }  // an app sign-up always signs in
        return SessionReply(kind: SignUpBody.kind, session, displayName: result.account.displayName)
    }

    /// `projects/{p}/accounts`, or `accounts:signUp` with admin credentials: an administrator creates an account.
    @Sendable func create(_ request: Request, context: HeraldRequestContext) async throws -> CreatedAccountReply {
        try context.requireAdmin()
        let body = try await request.decode(as: SignUpBody.self, context: context)
        if body.idToken != nil && body.localId != nil { throw HeraldError(.unexpectedParameter, "User ID") }
        let signUp = body.request
        let account = try await offload { try accounts.createAccount(signUp, as: .admin) }
        return CreatedAccountReply(localId: account.uid, email: account.email, displayName: account.displayName)
    }

    /// `accounts:signUp`: an app's sign-up, or an administrator's create (the Admin SDKs' `create_user`).
    @Sendable func signUpOrCreate(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        if context.caller == .admin { return try await create(request, context: context).response(from: request, context: context) }
        return try await signUp(request, context: context).response(from: request, context: context)
    }

    /// `accounts:signInWithPassword`.
    @Sendable func signInWithPassword(_ request: Request, context: HeraldRequestContext) async throws -> SessionReply {
        let body = try await request.decode(as: SignInWithPasswordBody.self, context: context)
        let session = try await accounts.signInWithPassword(email: body.email, password: body.password, clientIP: context.clientIP)
        return SessionReply(kind: "identitytoolkit#VerifyPasswordResponse", session, registered: true)
    }

    /// `accounts:delete`: the caller's own account (`idToken`) or, for admins, the account `localId`.
    @Sendable func delete(_ request: Request, context: HeraldRequestContext) async throws -> DeletedAccountReply {
        let body = try await request.decode(as: DeleteAccountBody.self, context: context)
        guard context.caller == .admin else {
            try await accounts.deleteOwnAccount(idToken: body.idToken)
            return DeletedAccountReply()
        }
        guard let uid = body.localId, !uid.isEmpty else { throw HeraldError(.missingLocalID, "") }
        try await offload { try accounts.deleteAccount(uid: uid) }
        return DeletedAccountReply()
    }
}

/// `accounts:signUp`'s and an admin create's body; `localId`, `emailVerified` and `disabled` are for admins.
struct SignUpBody: StrictDecodable {
    static let kind = "identitytoolkit#SignupNewUserResponse"

    let email: String?
    let password: String?
    let displayName: String?
    let photoUrl: String?
    let localId: String?
    let emailVerified: Bool?
    let disabled: Bool?
    /// An app's signed-in user adding an email and password to their account.
    let idToken: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case email, password, displayName, photoUrl, localId, emailVerified, disabled, idToken
    }

    static let ignoredFields: Set<String> = [
        "phoneNumber", "returnSecureToken", "tenantId", "targetProjectId", "captchaResponse", "clientType",
        "recaptchaVersion",
    ]

    var request: SignUpRequest {
        SignUpRequest(
            email: email, password: password, displayName: displayName, photoURL: photoUrl, localId: localId,
            emailVerified: emailVerified, disabled: disabled)
    }
}

/// An admin create's answer.
struct CreatedAccountReply: ResponseEncodable {
    let kind = SignUpBody.kind
    let localId: String
    let email: String?
    let displayName: String?
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
