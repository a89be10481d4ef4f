import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// The pages an action link opens (`/__/auth/action`) and the hosting-link redirect (`/__/auth/links`).
///
/// A GET never consumes a code (mail scanners pre-fetch links); it is recorded as a click. The POST
/// consumes, and must carry the form's token, an HMAC of the code under the server key (CSRF). When the
/// app owns the accounts, a GET hands a usable code to the app at its continue URL and nothing posts.
struct ActionPagesController: Sendable {
    let configuration: HeraldConfiguration
    let redemption: RedemptionService
    let pages: PageRenderer

    var routes: RouteCollection<HeraldRequestContext> {
        RouteCollection(context: HeraldRequestContext.self)
            .add(middleware: ClientAddressMiddleware(trustedProxies: configuration.limits.trustedProxies))
            .get("__/auth/action", use: show)
            .post("__/auth/action", use: submit)
            .get("__/auth/links", use: unwrap)
    }

    /// `GET`: records the click, then shows the confirm or reset form; sign-in links, and every link when
    /// the app owns the accounts, go on to the continue URL with the code.
    @Sendable func show(_ request: Request, context: HeraldRequestContext) async -> Response {
        let query = (try? request.uri.decodeQuery(as: ActionParameters.self, context: context)) ?? ActionParameters()
        let lang = query.lang
        guard let (kind, code) = query.action(apiKey: apiKey) else {
            return pages.page(.error, lang, "missing_parameters", .badRequest)
        }
        let visitor = context.visitor(of: request)
        let check: LinkCheck
        do {
            check = try await offload { try redemption.click(code: code, kind: kind, visitor: visitor) }
        } catch let error as HeraldError where error.code == .unavailable {
            return pages.page(.error, lang, "unavailable", .serviceUnavailable)
        } catch {
            context.logger.error("recording a click failed", metadata: ["error": "\(error)"])
            return pages.page(.error, lang, "invalid_code", .internalServerError)
        }
        let info: CodeInfo
        switch check {
        case .usable(let usable): info = usable
        case .invalid: return pages.page(.error, lang, "invalid_code", .badRequest)
        case .used: return pages.page(.error, lang, "used_code", .badRequest)
        case .expired: return pages.page(.error, lang, "expired_code", .badRequest)
        }
        let continueURL = authorizedContinueURL(query.continueUrl)
        guard kind != .signIn, redemption.ownsAccounts else {
            // The app completes the action with the link's parameters (e.g. accounts:signInWithEmailLink).
            guard let continueURL else { return pages.page(.error, lang, "missing_parameters", .badRequest) }
            return Self.redirect(handingOver: code, kind, to: continueURL, apiKey: apiKey, lang: pages.resolve(lang).value)
        }
        var form = pageForm(kind, code, continueURL)
        form.email = info.email
        form.newEmail = info.newEmail
        let confirm: PageRenderer.Kind = kind == .recoverEmail ? .recoverConfirm : .verifyConfirm
        return pages.page(kind == .resetPassword ? .resetForm : confirm, lang, form: form)
    }

    /// `POST`: checks the form's token and consumes the code, then goes to the continue URL or a success page.
    @Sendable func submit(_ request: Request, context: HeraldRequestContext) async -> Response {
        var request = request
        guard let body = try? await request.collectBody(upTo: 16 * 1024),
            let fields = try? URLEncodedFormDecoder().decode(ActionParameters.self, from: String(buffer: body))
        else { return pages.page(.error, nil, "missing_parameters", .badRequest) }
        let lang = fields.lang
        guard redemption.ownsAccounts else { return pages.page(.error, lang, "invalid_code", .badRequest) }
        guard let (kind, code) = fields.action(apiKey: apiKey), kind != .signIn else {
            return pages.page(.error, lang, "missing_parameters", .badRequest)
        }
        let visitor = context.visitor(of: request)
        guard let token = fields.csrfToken, Secret.equal(token, redemption.formToken(for: code)) else {
            _ = try? await offload { try redemption.recordRejected(code: code, visitor: visitor, reason: "CSRF") }
            return pages.page(.error, lang, "csrf_failed", .forbidden)
        }
        let continueURL = authorizedContinueURL(fields.continueUrl)
        let message: String
        do {
            message = try await redeem(kind, code, newPassword: fields.newPassword ?? "", visitor: visitor)
        } catch let error as HeraldError where error.code == .weakPassword {
            var form = pageForm(kind, code, continueURL)
            form.email = try? await offload { try redemption.inspect(code: code, visitor: visitor).email }
            return pages.page(.resetForm, lang, "weak_password", .badRequest, form: form)
        } catch let error as HeraldError where error.code == .unavailable {
            return pages.page(.error, lang, "unavailable", .serviceUnavailable)
        } catch let error as HeraldError {
            return pages.page(.error, lang, error.code == .expiredOOBCode ? "expired_code" : "invalid_code", .badRequest)
        } catch {
            context.logger.error("redeeming from the action page failed", metadata: ["error": "\(error)"])
            return pages.page(.error, lang, "invalid_code", .internalServerError)
        }
        if let continueURL { return Self.redirect(to: continueURL) }
        return pages.page(.success, lang, message)
    }

    /// `/__/auth/links?link=…`: redirects to the wrapped action link, only if it is one of ours.
    @Sendable func unwrap(_ request: Request, context: HeraldRequestContext) -> Response {
        let query = (try? request.uri.decodeQuery(as: ActionParameters.self, context: context)) ?? ActionParameters()
        guard let link = query.link, link.hasPrefix(configuration.links.actionURL + "?") else {
            return pages.page(.error, query.lang, "missing_parameters", .badRequest)
        }
        return Self.redirect(to: link)
    }

    // MARK: - Helpers

    private var apiKey: String { configuration.project.apiKey }

    /// Consumes the code as the page's action; returns the success message's key.
    private func redeem(_ kind: ActionKind, _ code: String, newPassword: String, visitor: Visitor) async throws -> String {
        if kind == .resetPassword {
            _ = try await offload { try redemption.resetPassword(code: code, newPassword: newPassword, visitor: visitor) }
            return "password_changed"
        }
        let (_, applied) = try await offload { try redemption.applyVerification(code: code, visitor: visitor) }
        switch applied.kind {
        case .verifyAndChangeEmail: return "changed"
        case .recoverEmail: return "recovered"
        default: return "verified"
        }
    }

    /// The continue URL if its host is an authorized domain; never redirect anywhere else.
    private func authorizedContinueURL(_ url: String?) -> String? {
        guard let url, !url.isEmpty else { return nil }
        return ActionCodeSettings.redirectTarget(url, authorizedDomains: configuration.links.authorizedDomains)
    }

    private func pageForm(_ kind: ActionKind, _ code: String, _ continueURL: String?) -> PageForm {
        let token = redemption.formToken(for: code)
        return PageForm(mode: kind.mode, oobCode: code, apiKey: apiKey, csrfToken: token, continueUrl: continueURL)
    }

    static func redirect(to location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    /// Sends the visitor to the app's continue URL with the link's parameters, as Firebase's page does for sign-in.
    static func redirect(
        handingOver code: String, _ kind: ActionKind, to continueURL: String, apiKey: String, lang: String
    ) -> Response {
        // `continueURL` is a browser's serialization, so its first `#` starts the fragment.
        let fragmentStart = continueURL.firstIndex(of: "#") ?? continueURL.endIndex
        let base = continueURL[..<fragmentStart]
        let parameters = PercentEncoding.query([("apiKey", apiKey), ("oobCode", code), ("mode", kind.mode), ("lang", lang)])
        let separator = base.contains("?") ? (base.hasSuffix("?") || base.hasSuffix("&") ? "" : "&") : "?"
        return redirect(to: base + separator + parameters + continueURL[fragmentStart...])
    }
}
