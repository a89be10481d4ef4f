import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/__/auth/code`: the page where a person types the code from a verification, email-change or password-reset mail
/// on any device, without its link (`policy.typedCodes`). Email-link sign-in codes are typed into the app instead:
/// the session belongs there.
///
/// The form names the address and the code; a POST from another site's page is refused (its `Origin` must be this
/// one's), and wrong codes count as `codes:redeemTyped`'s do.
struct TypedCodePageController: Sendable {
    let configuration: HeraldConfiguration
    let redemption: RedemptionService
    let pages: PageRenderer

    var routes: RouteCollection<HeraldRequestContext> {
        RouteCollection(context: HeraldRequestContext.self)
            .add(middleware: ClientAddressMiddleware(trustedProxies: configuration.limits.trustedProxies))
            .get("__/auth/code", use: show)
            .post("__/auth/code", use: submit)
    }

    /// The actions whose codes this page redeems, by their link's `mode`.
    static let modes: Set<ActionKind> = [.verifyEmail, .verifyAndChangeEmail, .resetPassword]

    @Sendable func show(_ request: Request, context: HeraldRequestContext) async -> Response {
        let query = (try? request.uri.decodeQuery(as: TypedCodeFields.self, context: context)) ?? TypedCodeFields()
        guard configuration.policy.typedCodes != .off, redemption.ownsAccounts else {
            return pages.page(.error, query.lang, "typed_codes_off", .badRequest)
        }
        guard let kind = query.kind else { return pages.page(.error, query.lang, "missing_parameters", .badRequest) }
        return pages.page(.codeForm, query.lang, form: form(kind, query))
    }

    @Sendable func submit(_ request: Request, context: HeraldRequestContext) async -> Response {
        var request = request
        guard let body = try? await request.collectBody(upTo: 16 * 1024),
            let fields = try? URLEncodedFormDecoder().decode(TypedCodeFields.self, from: String(buffer: body))
        else { return pages.page(.error, nil, "missing_parameters", .badRequest) }
        let lang = fields.lang
        guard configuration.policy.typedCodes != .off, redemption.ownsAccounts else {
            return pages.page(.error, lang, "typed_codes_off", .badRequest)
        }
        guard let kind = fields.kind else { return pages.page(.error, lang, "missing_parameters", .badRequest) }
        guard Self.sameOrigin(request) else { return pages.page(.error, lang, "csrf_failed", .forbidden) }
        let continueURL = fields.continueUrl.flatMap {
            ActionCodeSettings.redirectTarget($0, authorizedDomains: configuration.links.authorizedDomains)
        }
        let outcome: TypedCodeOutcome
        do {
            outcome = try await redemption.redeemTypedCode(
                kind, email: fields.email, code: fields.code, newPassword: fields.newPassword, visitor: context.visitor(of: request))
        } catch let error as HeraldError {
            let message: String =
                switch error.code {
                case .weakPassword: "weak_password"
                case .expiredOOBCode: "expired_typed_code"
                case .tooManyAttempts: "too_many_typed_codes"
                case .unavailable: "unavailable"
                case .missingEmail, .missingOOBCode, .invalidEmail: "missing_typed_code"
                default: "wrong_typed_code"
                }
            let status: HTTPResponse.Status = error.code == .unavailable ? .serviceUnavailable : .badRequest
            return pages.page(.codeForm, lang, message, status, form: form(kind, fields))
        } catch {
            context.logger.error("redeeming a typed code from its page failed", metadata: ["error": "\(error)"])
            return pages.page(.error, lang, "unavailable", .internalServerError)
        }
        if let continueURL { return ActionPagesController.redirect(to: continueURL) }
        let message =
            switch outcome {
            case .passwordReset: "password_changed"
            case .verified(_, let code) where code.kind == .verifyAndChangeEmail: "changed"
            default: "verified"
            }
        return pages.page(.success, lang, message)
    }

    /// A POST from a page of this origin (browsers send `Origin` with every form POST; a missing one is a non-browser
    /// client, which no cross-site page can make a victim's browser be).
    static func sameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else { return true }
        guard let host = request.head.authority, let parts = URLComponents(string: origin),
            let originHost = parts.host
        else { return false }
        let originAuthority = originHost + (parts.port.map { ":\($0)" } ?? "")
        return originAuthority.lowercased() == host.lowercased()
    }

    private func form(_ kind: ActionKind, _ fields: TypedCodeFields) -> PageForm {
        var form = PageForm(mode: kind.mode, oobCode: "", apiKey: "", csrfToken: "", continueUrl: fields.continueUrl)
        form.email = fields.email
        form.letters = configuration.policy.typedCodeAlphabet == .letters
        return form
    }
}

/// `/__/auth/code`'s query and form: the action's `mode`, `email`, `code`, a reset's `newPassword`, `lang` and the
/// app's `continueUrl`.
struct TypedCodeFields: Decodable, Sendable {
    var mode: String?
    var email: String?
    var code: String?
    var newPassword: String?
    var lang: String?
    var continueUrl: String?

    var kind: ActionKind? {
        mode.flatMap(ActionKind.init(mode:)).flatMap { TypedCodePageController.modes.contains($0) ? $0 : nil }
    }
}
