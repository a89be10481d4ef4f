import HeraldActions
import HeraldCore
import Hummingbird

extension IdentityToolkitController {
    /// `accounts:update`: applies a verification code, or (admin) edits an account.
    @Sendable func update(_ request: Request, context: HeraldRequestContext) async throws -> UpdateReply {
        let body = try await request.decode(as: UpdateBody.self, context: context)
        let actions = actions
        if let code = body.oobCode {
            let visitor = context.visitor(of: request)
            let (account, applied) = try await offload { try actions.applyVerification(code: code, visitor: visitor) }
            return UpdateReply(verified: account, newEmail: applied.kind == .verifyAndChangeEmail ? applied.newEmail : nil)
        }
        guard context.caller == .admin, let uid = body.localId else {
            throw HeraldError(.invalidRequestType, "Unsupported request parameters.")
        }
        let edit = body.edit
        let account = try await offload { try actions.editAccount(uid: uid, edit) }
        return UpdateReply(edited: account)
    }
}

/// `accounts:update`'s body: an `oobCode` to apply, or an admin's edit of the account `localId`.
struct UpdateBody: StrictDecodable {
    let oobCode: String?
    let localId: String?
    let email: String?
    let password: String?
    let displayName: String?
    let emailVerified: Bool?
    let disableUser: Bool?
    /// `DISPLAY_NAME` removes the display name.
    let deleteAttribute: StringList?
    /// Unix seconds: ID tokens issued earlier stop working (`revoke_refresh_tokens`).
    let validSince: Int64Text?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case oobCode, localId, email, password, displayName, emailVerified, disableUser, deleteAttribute, validSince
    }

    static let ignoredFields: Set<String> = [
        "deleteProvider", "photoUrl", "phoneNumber", "customAttributes", "idToken", "returnSecureToken", "tenantId", "targetProjectId",
    ]

    var edit: AccountEdit {
        var edit = AccountEdit()
        edit.email = email
        edit.password = password
        edit.displayName = displayName
        edit.deleteDisplayName = deleteAttribute?.values.contains("DISPLAY_NAME") ?? false
        edit.emailVerified = emailVerified
        edit.disabled = disableUser
        edit.validSince = validSince?.text
        return edit
    }
}

/// `accounts:update`'s answer.
struct UpdateReply: ResponseEncodable {
    let kind = "identitytoolkit#SetAccountInfoResponse"
    let localId: String
    let email: String
    let emailVerified: Bool
    var displayName: String?
    var newEmail: String?
    var providerUserInfo: [UserInfo.Provider]?

    /// After a verification code: the verified account, and the address it changed to.
    init(verified account: Account, newEmail: String?) {
        localId = account.uid
        email = account.email ?? ""
        emailVerified = true
        displayName = account.displayName
        self.newEmail = newEmail
        providerUserInfo = UserInfo.providers(of: account)
    }

    /// After an admin's edit.
    init(edited account: Account) {
        localId = account.uid
        email = account.email ?? ""
        emailVerified = account.emailVerified
    }
}
