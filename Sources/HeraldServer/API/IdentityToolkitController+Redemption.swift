import HeraldActions
import HeraldCore
import Hummingbird

extension IdentityToolkitController {
    /// `accounts:resetPassword`: without `newPassword`, says what a code is for (any action, never
    /// consuming it); with one, consumes a reset code and sets the password.
    @Sendable func resetPassword(_ request: Request, context: HeraldRequestContext) async throws -> ResetPasswordReply {
        let body = try await request.decode(as: ResetPasswordBody.self, context: context)
        let visitor = context.visitor(of: request)
        guard let newPassword = body.newPassword else {
            let code = try await offload { try redemption.inspect(code: body.oobCode, visitor: visitor) }
            // The client supplies a sign-in link's email itself.
            return ResetPasswordReply(
                requestType: code.kind.requestType, email: code.kind == .signIn ? nil : code.email, newEmail: code.newEmail)
        }
        let account = try await offload {
            try redemption.resetPassword(code: body.oobCode, newPassword: newPassword, visitor: visitor)
        }
        return ResetPasswordReply(requestType: ActionKind.resetPassword.requestType, email: account.email ?? "")
    }

    /// `accounts:signInWithEmailLink`: consumes a sign-in code and signs in (creating the account if new).
    @Sendable func signInWithEmailLink(_ request: Request, context: HeraldRequestContext) async throws -> SessionReply {
        let body = try await request.decode(as: SignInWithEmailLinkBody.self, context: context)
        let visitor = context.visitor(of: request)
        let (session, isNewUser) = try await redemption.signInWithEmailLink(
            email: body.email, code: body.oobCode, idToken: body.idToken, visitor: visitor)
        return SessionReply(kind: "identitytoolkit#EmailLinkSigninResponse", session, isNewUser: isNewUser)
    }
}

/// `accounts:resetPassword`'s body.
struct ResetPasswordBody: StrictDecodable {
    let oobCode: String?
    let newPassword: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case oobCode, newPassword }

    static let ignoredFields: Set<String> = ["email", "oldPassword", "tenantId"]
}

/// `accounts:resetPassword`'s answer.
struct ResetPasswordReply: ResponseEncodable {
    let kind = "identitytoolkit#ResetPasswordResponse"
    let requestType: String
    var email: String?
    var newEmail: String?
}

/// `accounts:signInWithEmailLink`'s body; `idToken` links the address to that account instead.
struct SignInWithEmailLinkBody: StrictDecodable {
    let email: String?
    let oobCode: String?
    let idToken: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case email, oobCode, idToken }

    static let ignoredFields: Set<String> = ["tenantId", "returnSecureToken"]
}
