import HeraldActions
import HeraldCore
import Hummingbird

extension IdentityToolkitController {
    /// `accounts:update`: applies a code (`oobCode`), changes the caller's own account (`idToken`), or
    /// (admin) edits the account `localId`.
    @Sendable func update(_ request: Request, context: HeraldRequestContext) async throws -> UpdateReply {
        let body = try await request.decode(as: UpdateBody.self, context: context)
        if let code = body.oobCode {
            let visitor = context.visitor(of: request)
            let (account, applied) = try await offload { try redemption.applyVerification(code: code, visitor: visitor) }
            return UpdateReply(applied: account, newEmail: applied.kind == .verifyAndChangeEmail ? applied.newEmail : nil)
        }
        if let idToken = body.idToken {
            if body.customAttributes != nil { throw HeraldError(.insufficientPermission, "") }  // an administrator's alone
            if body.disableUser != nil {  // an owner cannot (un)disable themselves; `emailVerified` is ignored, as Firebase does
                throw HeraldError(.operationNotAllowed, "")
            }
            if let link = body.linkProviderUserInfo {
                let uid = try await sessions.account(forIDToken: idToken).uid
                _ = try await providers.linkProvider(link.value, to: uid, byAdministrator: false, visitor: context.visitor(of: request))
            }
            let locale = request.headers[.init("X-Firebase-Locale")!].flatMap { try? LocaleTag($0) }
            var edit = body.profileEdit
            edit.locale = locale?.value
            let update = try await accounts.updateOwnAccount(idToken: idToken, edit)
            let identities = try await offload { try accounts.identities(of: update.account.uid) }
            var reply = UpdateReply(updated: update.account, identities: identities)
            if body.email != nil { reply.newEmail = update.account.email }
            if let session = update.session {
                reply.idToken = session.idToken
                reply.refreshToken = session.refreshToken
                reply.expiresIn = session.expiresIn
            }
            return reply
        }
        guard context.caller == .admin else { throw HeraldError(.invalidRequestType, "Unsupported request parameters.") }
        guard let uid = body.localId, !uid.isEmpty else { throw HeraldError(.missingLocalID, "") }
        if let link = body.linkProviderUserInfo {
            _ = try await providers.linkProvider(link.value, to: uid, byAdministrator: true, visitor: context.visitor(of: request))
        }
        let edit = body.edit
        let (account, identities) = try await offload {
            let account = try accounts.editAccount(uid: uid, edit)
            return (account, try accounts.identities(of: uid))
        }
        return UpdateReply(updated: account, identities: identities)
    }
}

/// `accounts:update`'s body: an `oobCode` to apply, the caller's own changes (`idToken`), or an admin's
/// edit of the account `localId`.
struct UpdateBody: StrictDecodable {
    let oobCode: String?
    let idToken: String?
    let localId: String?
    let email: String?
    let password: String?
    let displayName: String?
    let photoUrl: String?
    let emailVerified: Bool?
    let disableUser: Bool?
    /// `DISPLAY_NAME`, `PHOTO_URL`, `PASSWORD` (names or protobuf numbers).
    let deleteAttribute: EnumList?
    /// Unix seconds: ID tokens issued earlier stop working (`revoke_refresh_tokens`).
    let validSince: Int64Text?
    let returnSecureToken: Bool?
    /// Providers to unlink (`password`, `google.com`, …).
    let deleteProvider: [String]?
    /// Custom claims (admin): a JSON object as text, carried by the account's ID tokens.
    let customAttributes: String?
    /// A provider user to link (the Node Admin SDK's `providerToLink`).
    let linkProviderUserInfo: ProviderUserInfoBody?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case oobCode, idToken, localId, email, password, displayName, photoUrl, emailVerified, disableUser, deleteAttribute
        case validSince, returnSecureToken, deleteProvider, customAttributes, linkProviderUserInfo
    }

    static let ignoredFields: Set<String> = [
        "phoneNumber", "tenantId", "targetProjectId", "captchaChallenge", "captchaResponse",
        "instanceId", "delegatedProjectNumber", "lastLoginAt", "createdAt", "mfa", "providers",
        "upgradeToFederatedLogin",
    ]

    var deletedAttributes: Set<String> { Set(deleteAttribute?.names(UserAttributeName.name) ?? []) }

    var edit: AccountEdit {
        var edit = AccountEdit()
        edit.email = email
        edit.password = password
        edit.displayName = displayName
        edit.deleteDisplayName = deletedAttributes.contains("DISPLAY_NAME")
        edit.photoURL = photoUrl
        edit.deletePhotoURL = deletedAttributes.contains("PHOTO_URL")
        edit.emailVerified = emailVerified
        edit.disabled = disableUser
        edit.validSince = validSince?.text
        edit.customAttributes = customAttributes
        return edit
    }

    var profileEdit: ProfileEdit {
        var edit = ProfileEdit()
        edit.email = email
        edit.password = password
        edit.displayName = displayName
        edit.photoURL = photoUrl
        edit.deleteAttributes = deletedAttributes
        edit.deleteProviders = Set(deleteProvider ?? [])
        edit.returnSecureToken = returnSecureToken ?? false
        edit.endSessions = validSince != nil
        return edit
    }
}

/// Firebase's `ProviderUserInfo` as `linkProviderUserInfo` carries it.
struct ProviderUserInfoBody: Decodable, Sendable {
    let providerId: String?
    let rawId: String?
    let email: String?
    let displayName: String?
    let photoUrl: String?
    let screenName: String?

    var value: ProviderLink {
        ProviderLink(
            providerId: providerId, rawId: rawId, email: email, displayName: displayName, photoURL: photoUrl, screenName: screenName)
    }
}

/// `accounts:update`'s answer: the account as it now is, and new tokens when its sessions ended.
struct UpdateReply: ResponseEncodable {
    let kind = "identitytoolkit#SetAccountInfoResponse"
    let localId: String
    let email: String?
    let emailVerified: Bool
    var displayName: String?
    var photoUrl: String?
    var newEmail: String?
    /// `REDACTED`, base64, when the account has a password: as production answers.
    var passwordHash: String?
    var providerUserInfo: [UserInfo.Provider]
    var idToken: String?
    var refreshToken: String?
    var expiresIn: String?

    /// After a code: the account, and the address it changed to. (A code's answer lists providers by the
    /// account's email only, as before providers existed; `lookup` shows them in full.)
    init(applied account: Account, newEmail: String?) {
        self.init(updated: account, identities: [])
        self.newEmail = newEmail
    }

    /// After the owner's or an admin's edit.
    init(updated account: Account, identities: [FederatedIdentity]) {
        localId = account.uid
        email = account.email
        emailVerified = account.emailVerified
        displayName = account.displayName
        photoUrl = account.photoURL
        passwordHash = account.passwordHash == nil ? nil : UserInfo.redactedPasswordHash
        providerUserInfo = UserInfo.providers(of: account, identities: identities)
    }
}
