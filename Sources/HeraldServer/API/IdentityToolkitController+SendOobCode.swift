import HeraldActions
import HeraldCore
import Hummingbird

extension IdentityToolkitController {
    /// `accounts:sendOobCode`: queues the action email (or, for admins with `returnOobLink`, returns the link).
    @Sendable func sendOobCode(_ request: Request, context: HeraldRequestContext) async throws -> OobCodeReply {
        let body = try await request.decode(as: SendOobCodeBody.self, context: context)
        // The language the client wants the email and the link in; an unknown one is ignored.
        let locale = request.headers[.init("X-Firebase-Locale")!].flatMap { try? LocaleTag($0) }
        var send = try body.sendRequest(locale: locale?.value)
        send.clientIP = context.clientIP
        let caller = context.caller
        let result = try await sending.send(send, as: caller)
        guard case .link(let code, let link) = result.delivery else { return OobCodeReply(email: result.email) }
        return OobCodeReply(email: result.email, oobCode: code, oobLink: link)
    }
}

/// `accounts:sendOobCode`'s body; the Admin SDKs' and the JS SDK's spellings of the app fields both work.
struct SendOobCodeBody: StrictDecodable {
    let requestType: EnumText?
    let email: String?
    let newEmail: String?
    let idToken: String?
    let continueUrl: String?
    let canHandleCodeInApp: Bool?
    let iOSBundleId: String?
    let iosBundleId: String?
    let iOSAppStoreId: String?
    let iosAppStoreId: String?
    let androidPackageName: String?
    let androidInstallApp: Bool?
    let androidMinimumVersion: String?
    let androidMinimumVersionCode: String?
    let linkDomain: String?
    let dynamicLinkDomain: String?
    let returnOobLink: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case requestType, email, newEmail, idToken, continueUrl, canHandleCodeInApp, iOSBundleId, iosBundleId, iOSAppStoreId
        case iosAppStoreId, androidPackageName, androidInstallApp, androidMinimumVersion, androidMinimumVersionCode, linkDomain
        case dynamicLinkDomain, returnOobLink
    }

    static let ignoredFields: Set<String> = [
        "targetProjectId", "targetProjectid", "clientType", "captchaResp", "challenge", "userIp", "recaptchaVersion", "tenantId",
    ]

    /// - Throws: `MISSING_REQ_TYPE`, `INVALID_REQ_TYPE`.
    func sendRequest(locale: String?) throws -> SendRequest {
        let requestType = self.requestType?.name(ActionKind.requestType(number:))
        guard let requestType, !requestType.isEmpty, requestType != "OOB_REQ_TYPE_UNSPECIFIED" else {
            throw HeraldError(.missingRequestType, "")
        }
        guard let kind = ActionKind(requestType: requestType), kind.isRequestable else { throw HeraldError(.invalidRequestType, "") }
        let settings = ActionCodeSettings(
            url: continueUrl, handleCodeInApp: canHandleCodeInApp ?? false, iOSBundleId: iOSBundleId ?? iosBundleId,
            iOSAppStoreId: iOSAppStoreId ?? iosAppStoreId, androidPackageName: androidPackageName,
            androidInstallApp: androidInstallApp ?? false, androidMinimumVersion: androidMinimumVersion ?? androidMinimumVersionCode,
            linkDomain: linkDomain, dynamicLinkDomain: dynamicLinkDomain)
        return SendRequest(
            kind: kind, email: email, newEmail: newEmail, idToken: idToken, settings: settings, locale: locale,
            returnLink: returnOobLink ?? false)
    }
}

/// `accounts:sendOobCode`'s answer: the address, plus the code and link for `returnOobLink`.
struct OobCodeReply: ResponseEncodable {
    let kind = "identitytoolkit#GetOobConfirmationCodeResponse"
    let email: String
    var oobCode: String?
    var oobLink: String?
}
