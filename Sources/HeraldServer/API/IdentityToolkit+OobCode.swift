import Foundation
import HeraldCore
import HeraldStore

extension IdentityToolkit {
    static let sendOobCodeFields: Set<String> = [
        "requestType", "email", "newEmail", "idToken", "continueUrl", "canHandleCodeInApp", "iOSBundleId", "iOSAppStoreId",
        "iosAppStoreId", "iosBundleId", "androidPackageName", "androidInstallApp", "androidMinimumVersion",
        "androidMinimumVersionCode", "linkDomain", "dynamicLinkDomain", "returnOobLink", "targetProjectId", "targetProjectid",
        "clientType", "captchaResp", "challenge", "userIp", "recaptchaVersion", "tenantId",
    ]

    /// `accounts:sendOobCode`: queues the email (or, for admins with `returnOobLink`, returns the link).
    func sendOobCode(_ call: Call) throws -> [String: Any] {
        let body = try JSONBody(call.body, allowed: Self.sendOobCodeFields)
        guard let type = try body.string("requestType"), !type.isEmpty else { throw HeraldError(.missingRequestType, "") }
        guard let kind = ActionKind(requestType: type) else { throw HeraldError(.invalidRequestType, "") }
        let returnLink = try body.bool("returnOobLink") ?? false
        if returnLink { try requireAdmin(call) }
        let settings = ActionCodeSettings(
            url: try body.string("continueUrl"), handleCodeInApp: try body.bool("canHandleCodeInApp") ?? false,
            iOSBundleId: try body.string("iOSBundleId") ?? body.string("iosBundleId"),
            iOSAppStoreId: try body.string("iOSAppStoreId") ?? body.string("iosAppStoreId"),
            androidPackageName: try body.string("androidPackageName"), androidInstallApp: try body.bool("androidInstallApp") ?? false,
            androidMinimumVersion: try body.string("androidMinimumVersion") ?? body.string("androidMinimumVersionCode"),
            linkDomain: try body.string("linkDomain"), dynamicLinkDomain: try body.string("dynamicLinkDomain"))
        let server = context.configuration.server
        let response = ["kind": "identitytoolkit#GetOobConfirmationCodeResponse"]

        // Whose email this is, per request type; nil means "answer as if sent, send nothing" (enumeration protection).
        var email: String
        var newEmail: String?
        var displayName: String?
        var send = true
        switch kind {
        case .signIn:
            email = try requiredEmail(body)
        case .resetPassword:
            email = try requiredEmail(body)
            let account = try context.store.account(email: email)
            if account == nil || account?.disabled == true {
                guard server.enumerationProtection, !returnLink else {
                    throw HeraldError(account == nil ? .emailNotFound : .userDisabled, "")
                }
                send = false
            }
            displayName = account?.displayName
        case .verifyEmail, .verifyAndChangeEmail:
            let account: Account
            if let token = try body.string("idToken") {
                account = try context.account(forIDToken: token)
            } else if call.caller == .admin {
                let address = try requiredEmail(body)
                guard let found = try context.store.account(email: address) else { throw HeraldError(.userNotFound, "") }
                account = found
            } else {
                throw HeraldError(.missingIDToken, "")
            }
            guard let current = account.email else { throw HeraldError(.missingEmail, "the account has no email") }
            email = current
            displayName = account.displayName
            if kind == .verifyAndChangeEmail {
                guard let requested = try body.string("newEmail"), !requested.isEmpty else { throw HeraldError(.missingNewEmail, "") }
                newEmail = try EmailAddress(requested, code: .invalidNewEmail).value
                if try context.store.account(email: newEmail!) != nil {
                    guard server.enumerationProtection, !returnLink else { throw HeraldError(.emailExists, "") }
                    send = false
                }
            }
        }
        let locale = call.locale.flatMap { try? LocaleTag($0) }?.value
        let request = try ActionRequest(
            kind: kind, email: email, newEmail: newEmail, settings: settings, locale: locale, displayName: displayName,
            links: context.configuration.links)
        email = request.email.value
        guard send else {
            try context.throttleSilentSend(recipient: request.recipient.value, kind: kind)
            return response.merging(["email": email]) { $1 }
        }

        if returnLink || server.emulatorMode {
            let lifetime = context.configuration.links.lifetime[kind] ?? 3600
            let code = try context.store.mintCode(kind, email: email, newEmail: request.newEmail?.value, lifetime: lifetime)
            let link = context.links.link(for: kind, code: code.plaintext, settings: settings, lang: request.locale.value)
            if server.emulatorMode {
                var entry = ["email": email, "oobCode": code.plaintext, "oobLink": link, "requestType": kind.requestType]
                entry["newEmail"] = request.newEmail?.value
                context.emulatorCodes.withLock { $0.append(entry) }
            }
            guard returnLink else { return response.merging(["email": email]) { $1 } }
            return ["kind": response["kind"]!, "email": email, "oobCode": code.plaintext, "oobLink": link]
        }
        try context.store.enqueue(
            request, messageDomain: context.messageDomain, cooldown: context.configuration.policy.cooldown,
            dailyCap: context.configuration.policy.dailyCap)
        return response.merging(["email": email]) { $1 }
    }

    private func requiredEmail(_ body: JSONBody) throws -> String {
        guard let email = try body.string("email"), !email.isEmpty else { throw HeraldError(.missingEmail, "") }
        return try EmailAddress(email).value
    }

    /// `accounts:signInWithEmailLink`.
    func signInWithEmailLink(_ call: Call) throws -> [String: Any] {
        let body = try JSONBody(call.body, allowed: ["email", "oobCode", "idToken", "tenantId", "returnSecureToken"])
        guard let email = try body.string("email"), !email.isEmpty else { throw HeraldError(.missingEmail, "") }
        guard let code = try body.string("oobCode"), !code.isEmpty else { throw HeraldError(.missingOOBCode, "") }
        let linkTo = try body.string("idToken").map { try context.account(forIDToken: $0) }
        let (account, isNew) = try context.applyEmailLinkSignIn(email: email, code: code, linkTo: linkTo, visitor: call.visitor)
        return context.session(for: account, provider: "password").merging([
            "kind": "identitytoolkit#EmailLinkSigninResponse", "isNewUser": isNew,
        ]) { $1 }
    }

    /// `accounts:resetPassword`: inspects a code (no `newPassword`) or consumes a reset code.
    func resetPassword(_ call: Call) throws -> [String: Any] {
        let body = try JSONBody(call.body, allowed: ["oobCode", "newPassword", "email", "oldPassword", "tenantId"])
        guard let code = try body.string("oobCode"), !code.isEmpty else { throw HeraldError(.missingOOBCode, "") }
        let kind = "identitytoolkit#ResetPasswordResponse"
        guard let newPassword = try body.string("newPassword") else {
            guard let record = try context.store.code(code) else {
                try context.store.recordLinkEvent(codeID: nil, kind: "rejected", visitor: call.visitor, detail: "INVALID_OOB_CODE")
                throw HeraldError(.invalidOOBCode, "")
            }
            if let problem = record.problem(at: Date(), expecting: Set(ActionKind.allCases)) { throw problem }
            var response: [String: Any] = ["kind": kind, "requestType": record.kind.requestType]
            if record.kind != .signIn { response["email"] = record.email }  // the client supplies a sign-in email itself
            if let newEmail = record.newEmail { response["newEmail"] = newEmail }
            return response
        }
        let account = try context.applyPasswordReset(code: code, newPassword: newPassword, visitor: call.visitor)
        return ["kind": kind, "email": account.email ?? "", "requestType": "PASSWORD_RESET"]
    }
}
