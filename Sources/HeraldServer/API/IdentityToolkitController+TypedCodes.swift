import HeraldActions
import HeraldCore
import Hummingbird

extension IdentityToolkitController {
    /// `codes:redeemTyped` (Herald's own): redeems the code a person typed from the mail instead of opening its link,
    /// answering as the link's redemption does: `accounts:signInWithEmailLink`'s reply for `EMAIL_SIGNIN`,
    /// `accounts:update`'s for `VERIFY_EMAIL` and `VERIFY_AND_CHANGE_EMAIL`, `accounts:resetPassword`'s for
    /// `PASSWORD_RESET`; `codes:redeem`'s (admin calls only) when the app owns the accounts.
    @Sendable func redeemTypedCode(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let body = try await request.decode(as: RedeemTypedCodeBody.self, context: context)
        guard let requestType = body.requestType?.name(ActionKind.requestType(number:)), !requestType.isEmpty else {
            throw HeraldError(.missingRequestType, "")
        }
        guard let kind = ActionKind(requestType: requestType), kind.takesTypedCode else { throw HeraldError(.invalidRequestType, "") }
        if !redemption.ownsAccounts { try context.requireAdmin() }
        let outcome = try await redemption.redeemTypedCode(
            kind, email: body.email, code: body.code, newPassword: body.newPassword, sessionId: body.sessionId,
            visitor: context.visitor(of: request))
        switch outcome {
        case .signedIn(let session, let isNewUser):
            return try FirebaseJSONEncoder.response(SessionReply(kind: "identitytoolkit#EmailLinkSigninResponse", session, isNewUser: isNewUser))
        case .verified(let account, let code):
            return try FirebaseJSONEncoder.response(
                UpdateReply(applied: account, newEmail: code.kind == .verifyAndChangeEmail ? code.newEmail : nil))
        case .passwordReset(let account):
            return try FirebaseJSONEncoder.response(
                ResetPasswordReply(requestType: ActionKind.resetPassword.requestType, email: account.email ?? ""))
        case .redeemedForApp(let code):
            return try FirebaseJSONEncoder.response(AppCodeReply(code))
        }
    }
}

/// `codes:redeemTyped`'s body: the action, the address the mail went to, the code as typed, a reset's new password,
/// and the session id the app sent with `sendOobCode` when it bound the code to itself.
struct RedeemTypedCodeBody: StrictDecodable {
    let requestType: EnumText?
    let email: String?
    let code: String?
    let newPassword: String?
    let sessionId: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case requestType, email, code, newPassword, sessionId }

    static let ignoredFields: Set<String> = ["tenantId", "returnSecureToken"]
}
