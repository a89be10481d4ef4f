import Foundation
import HeraldCore
import HeraldStore

extension IdentityToolkit {
    /// `accounts:update`: applies a verification code, or (admin) edits a user.
    func update(_ call: Call) throws -> [String: Any] {
        let body = try JSONBody(
            call.body,
            allowed: [
                "oobCode", "localId", "email", "password", "displayName", "emailVerified", "disableUser", "deleteAttribute",
                "deleteProvider", "photoUrl", "phoneNumber", "customAttributes", "validSince", "idToken", "returnSecureToken",
                "tenantId", "targetProjectId",
            ])
        let kind = "identitytoolkit#SetAccountInfoResponse"
        if let code = try body.string("oobCode") {
            let (account, record) = try context.applyVerification(code: code, visitor: call.visitor)
            var response: [String: Any] = [
                "kind": kind, "localId": account.uid, "email": account.email ?? "", "emailVerified": true,
                "providerUserInfo": account.userInfo["providerUserInfo"] ?? [],
            ]
            if let displayName = account.displayName { response["displayName"] = displayName }
            if record.kind == .verifyAndChangeEmail { response["newEmail"] = record.newEmail }
            return response
        }
        guard call.caller == .admin, let uid = try body.string("localId") else {
            throw HeraldError(.invalidRequestType, "Unsupported request parameters.")
        }
        let password = try body.string("password")
        if let password { try PasswordHasher.checkStrength(password) }
        let hash = try password.map(PasswordHasher.hash)
        let account = try context.store.transaction { db -> Account in
            guard var account = try HeraldStore.account(db, uid: uid) else { throw HeraldError(.userNotFound, "") }
            if let email = try body.string("email") {
                account.email = try EmailAddress(email).value
                account.emailVerified = false
            }
            if let hash {
                account.passwordHash = hash
                account.validSince = Date().milliseconds
                if !account.providers.contains("password") { account.providers.append("password") }
            }
            if let name = try body.string("displayName") { account.displayName = try DisplayName.validate(name) }
            if let verified = try body.bool("emailVerified") { account.emailVerified = verified }
            if let disabled = try body.bool("disableUser") { account.disabled = disabled }
            if try body.strings("deleteAttribute").contains("DISPLAY_NAME") { account.displayName = nil }
            if let seconds = try body.string("validSince") {
                // revoke_refresh_tokens: tokens issued before this second stop working.
                guard let value = Int64(seconds), value >= 0, value < 253_402_300_800 else {
                    throw HeraldError(.invalidArgument, "validSince must be Unix seconds")
                }
                account.validSince = value * 1000
            }
            try HeraldStore.update(db, account)
            return account
        }
        return ["kind": kind, "localId": account.uid, "email": account.email ?? "", "emailVerified": account.emailVerified]
    }

    /// `accounts:createAuthUri`: sign-in methods for an email, or nothing under enumeration protection.
    func createAuthUri(_ call: Call) throws -> [String: Any] {
        let body = try JSONBody(
            call.body,
            allowed: [
                "identifier", "continueUri", "providerId", "sessionId", "tenantId", "authFlowType", "customParameter", "oauthScope", "context",
                "otaApp", "appId", "openidRealm", "hostedDomain",
            ])
        guard let identifier = try body.string("identifier"), !identifier.isEmpty else { throw HeraldError(.missingIdentifier, "") }
        guard let address = try? EmailAddress(identifier) else { throw HeraldError(.invalidIdentifier, "") }
        guard let continueURI = try body.string("continueUri"), !continueURI.isEmpty else { throw HeraldError(.missingContinueURI, "") }
        guard let url = URLComponents(string: continueURI), url.scheme != nil, url.host?.isEmpty == false else {
            throw HeraldError(.invalidContinueURI, "")
        }
        var response: [String: Any] = ["kind": "identitytoolkit#CreateAuthUriResponse", "sessionId": ActionCode.generate().plaintext]
        guard !context.configuration.server.enumerationProtection else { return response }
        let account = try context.store.account(email: address.value)
        var methods: [String] = []
        if account?.passwordHash != nil { methods.append("password") }
        if account?.emailLinkSignin == true { methods.append("emailLink") }
        response["registered"] = account != nil
        response["allProviders"] = account?.providers ?? []
        response["signinMethods"] = methods
        return response
    }

    /// `accounts:lookup`: the caller's own account (idToken) or, for admins, by localId / email.
    func lookup(_ call: Call) throws -> [String: Any] {
        let body = try JSONBody(
            call.body,
            allowed: [
                "idToken", "localId", "email", "phoneNumber", "federatedUserId", "initialEmail", "tenantId", "targetProjectId",
                "delegatedProjectNumber",
            ])
        var accounts: [Account] = []
        if let token = try body.string("idToken") {
            accounts = [try context.account(forIDToken: token)]
        } else {
            try requireAdmin(call)
            for uid in try body.strings("localId") { if let account = try context.store.account(uid: uid) { accounts.append(account) } }
            for email in try body.strings("email") { if let account = try context.store.account(email: email) { accounts.append(account) } }
        }
        var response: [String: Any] = ["kind": "identitytoolkit#GetAccountInfoResponse"]
        if !accounts.isEmpty { response["users"] = accounts.map(\.userInfo) }
        return response
    }

    /// `accounts:signUp` (apps) and `projects/{p}/accounts` (admin create).
    func signUp(_ call: Call, admin: Bool) throws -> [String: Any] {
        if admin { try requireAdmin(call) }
        let body = try JSONBody(
            call.body,
            allowed: [
                "email", "password", "displayName", "localId", "emailVerified", "disabled", "photoUrl", "phoneNumber", "returnSecureToken",
                "tenantId", "targetProjectId", "captchaResponse", "clientType", "recaptchaVersion",
            ])
        let email = try body.string("email").map { try EmailAddress($0).value }
        let password = try body.string("password")
        if !admin && (email == nil || password == nil) {
            throw HeraldError(email == nil ? .missingEmail : .init("MISSING_PASSWORD"), "")
        }
        if try body.string("localId") != nil && !admin { throw HeraldError(.insufficientPermission, "localId is for admin calls") }
        if let password { try PasswordHasher.checkStrength(password) }
        if let email, try context.store.account(email: email) != nil { throw HeraldError(.emailExists, "") }  // before the slow hash
        let now = Date()
        let account = Account(
            uid: try body.string("localId") ?? ServerContext.newUID(), email: email,
            emailVerified: admin ? try body.bool("emailVerified") ?? false : false, passwordHash: try password.map(PasswordHasher.hash),
            displayName: try body.string("displayName").map(DisplayName.validate), disabled: admin ? try body.bool("disabled") ?? false : false,
            validSince: now.milliseconds - 1000, createdAt: now, lastLoginAt: admin ? nil : now,
            providers: email != nil && password != nil ? ["password"] : [])
        try context.store.create(account)
        guard !admin else { return ["kind": "identitytoolkit#SignupNewUserResponse", "localId": account.uid, "email": email ?? ""] }
        return context.session(for: account, provider: "password").merging(["kind": "identitytoolkit#SignupNewUserResponse"]) { $1 }
    }

    /// `accounts:signInWithPassword`.
    func signInWithPassword(_ call: Call) throws -> [String: Any] {
        let body = try JSONBody(
            call.body, allowed: ["email", "password", "returnSecureToken", "tenantId", "captchaResponse", "clientType", "recaptchaVersion"])
        guard let email = try body.string("email"), !email.isEmpty else { throw HeraldError(.missingEmail, "") }
        guard let password = try body.string("password"), !password.isEmpty else { throw HeraldError(.init("MISSING_PASSWORD"), "") }
        let protected = context.configuration.server.enumerationProtection
        guard var account = try context.store.account(email: email.lowercased()) else {
            PasswordHasher.spendVerificationTime(password)  // an unknown email takes as long as a wrong password
            throw HeraldError(protected ? .invalidLoginCredentials : .emailNotFound, "")
        }
        guard let hash = account.passwordHash, PasswordHasher.verify(password, against: hash) else {
            if account.passwordHash == nil { PasswordHasher.spendVerificationTime(password) }
            throw HeraldError(protected ? .invalidLoginCredentials : .init("INVALID_PASSWORD"), "")
        }
        guard !account.disabled else { throw HeraldError(.userDisabled, "") }
        account.lastLoginAt = Date()
        try context.store.recordLogin(uid: account.uid, at: account.lastLoginAt!)  // only this column: never a stale row
        return context.session(for: account, provider: "password").merging([
            "kind": "identitytoolkit#VerifyPasswordResponse", "registered": true,
        ]) { $1 }
    }

    /// `accounts:delete`: the caller's own account (idToken) or, for admins, by localId.
    func delete(_ call: Call) throws -> [String: Any] {
        let body = try JSONBody(call.body, allowed: ["localId", "idToken", "tenantId", "targetProjectId"])
        let uid: String
        if let token = try body.string("idToken") {
            uid = try context.account(forIDToken: token).uid
        } else {
            try requireAdmin(call)
            guard let localId = try body.string("localId") else { throw HeraldError(.userNotFound, "") }
            uid = localId
        }
        guard try context.store.deleteAccount(uid: uid) else { throw HeraldError(.userNotFound, "") }
        return ["kind": "identitytoolkit#DeleteAccountResponse"]
    }
}
