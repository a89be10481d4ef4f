import HeraldActions
import HeraldCore
import Hummingbird

extension IdentityToolkitController {
    /// `accounts:lookup`: the caller's own account (`idToken`) or, for admins, accounts by `localId` and `email`.
    @Sendable func lookup(_ request: Request, context: HeraldRequestContext) async throws -> LookupReply {
        let body = try await request.decode(as: LookupBody.self, context: context)
        if context.caller == .app {
            let account = try await sessions.account(forIDToken: body.idToken)
            let identities = try await offload { try accounts.identities(of: account.uid) }
            return LookupReply(users: [UserInfo(account, identities: identities)])
        }
        let users = try await offload {
            try accounts.accounts(
                uids: body.localId?.values ?? [], emails: body.email?.values ?? [], phoneNumbers: body.phoneNumber?.values ?? []
            )
            .map { UserInfo($0, identities: try accounts.identities(of: $0.uid)) }
        }
        return LookupReply(users: users.isEmpty ? nil : users)
    }

    /// `accounts:createAuthUri`: an address's sign-in methods, or nothing under enumeration protection.
    @Sendable func createAuthUri(_ request: Request, context: HeraldRequestContext) async throws -> AuthURIReply {
        let body = try await request.decode(as: CreateAuthURIBody.self, context: context)
        let result = try await offload {
            try accounts.signInMethods(identifier: body.identifier, continueURI: body.continueUri, sessionId: body.sessionId)
        }
        return AuthURIReply(
            sessionId: result.sessionId, registered: result.registered, allProviders: result.allProviders,
            signinMethods: result.signinMethods)
    }
}

/// `accounts:lookup`'s body; `localId`, `email` and `phoneNumber` each take one string or several.
struct LookupBody: StrictDecodable {
    let idToken: String?
    let localId: StringList?
    let email: StringList?
    let phoneNumber: StringList?

    enum CodingKeys: String, CodingKey, CaseIterable { case idToken, localId, email, phoneNumber }

    static let ignoredFields: Set<String> = [
        "federatedUserId", "initialEmail", "tenantId", "targetProjectId", "delegatedProjectNumber",
    ]
}

/// `accounts:lookup`'s answer; `users` is left out when none matched.
struct LookupReply: ResponseEncodable {
    let kind = "identitytoolkit#GetAccountInfoResponse"
    let users: [UserInfo]?
}

/// `accounts:createAuthUri`'s body.
struct CreateAuthURIBody: StrictDecodable {
    let identifier: String?
    let continueUri: String?
    let sessionId: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case identifier, continueUri, sessionId }

    static let ignoredFields: Set<String> = [
        "providerId", "tenantId", "authFlowType", "customParameter", "oauthScope", "context", "otaApp", "appId",
        "openidRealm", "hostedDomain", "oauthConsumerKey",
    ]
}

/// `accounts:createAuthUri`'s answer; under enumeration protection only `kind` and `sessionId`.
struct AuthURIReply: ResponseEncodable {
    let kind = "identitytoolkit#CreateAuthUriResponse"
    let sessionId: String
    let registered: Bool?
    let allProviders: [String]?
    let signinMethods: [String]?
}
