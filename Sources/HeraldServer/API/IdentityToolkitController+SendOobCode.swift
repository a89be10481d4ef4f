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
    /// Herald's own: a code to type in the mail beside the link (`policy.typedCodes` decides when absent), and the
    /// app's session id that alone may type it.
    let typedCode: Bool?
    let typedCodeSessionId: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case requestType, email, newEmail, idToken, continueUrl, canHandleCodeInApp, iOSBundleId, iosBundleId, iOSAppStoreId
        case iosAppStoreId, androidPackageName, androidInstallApp, androidMinimumVersion, androidMinimumVersionCode, linkDomain
        case dynamicLinkDomain, returnOobLink, typedCode, typedCodeSessionId
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
        var settings = ActionCodeSettings(
            url: continueUrl, handleCodeInApp: canHandleCodeInApp ?? false, iOSBundleId: iOSBundleId ?? iosBundleId,
            iOSAppStoreId: iOSAppStoreId ?? iosAppStoreId, androidPackageName: androidPackageName,
            androidInstallApp: androidInstallApp ?? false, androidMinimumVersion: androidMinimumVersion ?? androidMinimumVersionCode,
            linkDomain: linkDomain, dynamicLinkDomain: dynamicLinkDomain)
        if let session = typedCodeSessionId {
            guard (1...256).contains(session.utf8.count) else {
                throw HeraldError(.invalidArgument, "typedCodeSessionId must be 1 to 256 bytes")
            }
            guard typedCode != false else { throw HeraldError(.invalidArgument, "typedCodeSessionId binds a typed code: drop typedCode: false") }
        }
        if typedCode != nil || typedCodeSessionId != nil {
            settings.typedCode = TypedCodeRequest(wanted: typedCode ?? true, session: typedCodeSessionId.map(Hex.sha256))
        }
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
