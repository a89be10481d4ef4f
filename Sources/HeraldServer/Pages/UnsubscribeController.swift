import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/unsubscribe?token=…`: the one-click unsubscribe of campaign mail (RFC 8058).
///
/// A mailbox provider's one-click `POST` (body `List-Unsubscribe=One-Click`) unsubscribes at once, answering
/// without a page to read. A `GET` (a person following the link, or a scanner pre-fetching it) changes nothing:
/// it shows a confirm page in the mail's language whose button posts. The token is signed per recipient, so
/// it needs no CSRF token: only the mail's reader has it.
struct UnsubscribeController: Sendable {
    let feedback: FeedbackService
    let pages: PageRenderer

    var routes: RouteCollection<HeraldRequestContext> {
        RouteCollection(context: HeraldRequestContext.self)
            .get("unsubscribe", use: show)
            .post("unsubscribe", use: submit)
    }

    /// The query or form fields: the token, and the page's language.
    struct Fields: Decodable, Sendable {
        var token: String?
        var lang: String?
    }

    @Sendable func show(_ request: Request, context: HeraldRequestContext) async -> Response {
        let query = (try? request.uri.decodeQuery(as: Fields.self, context: context)) ?? Fields()
        guard let token = query.token, !token.isEmpty else { return pages.page(.error, query.lang, "invalid_unsubscribe", .badRequest) }
        do {
            let target = try await offload { try feedback.unsubscribeTarget(token: token) }
            let lang = query.lang ?? target.locale
            var form = PageForm(mode: "", oobCode: "", apiKey: "", csrfToken: "", continueUrl: nil)
            form.email = target.email
            form.token = token
            return pages.page(.unsubscribeConfirm, lang, form: form)
        } catch let error as HeraldError where error.code == .unavailable {
            return pages.page(.error, query.lang, "unavailable", .serviceUnavailable)
        } catch let error as HeraldError where error.code == .invalidArgument {
            return pages.page(.error, query.lang, "invalid_unsubscribe", .badRequest)
        } catch {
            context.logger.error("showing an unsubscribe page failed", metadata: ["error": "\(error)"])
            return pages.page(.error, query.lang, "unavailable", .internalServerError)
        }
    }

    @Sendable func submit(_ request: Request, context: HeraldRequestContext) async -> Response {
        var request = request
        let query = (try? request.uri.decodeQuery(as: Fields.self, context: context)) ?? Fields()
        let body = (try? await request.collectBody(upTo: 16 * 1024)).map { String(buffer: $0) } ?? ""
        let form = (try? URLEncodedFormDecoder().decode(Fields.self, from: body)) ?? Fields()
        let lang = form.lang ?? query.lang
        guard let token = form.token ?? query.token, !token.isEmpty else {
            return pages.page(.error, lang, "invalid_unsubscribe", .badRequest)
        }
        do {
            try await offload { _ = try feedback.unsubscribe(token: token) }
        } catch let error as HeraldError where error.code == .unavailable {
            return pages.page(.error, lang, "unavailable", .serviceUnavailable)
        } catch let error as HeraldError where error.code == .invalidArgument {
            return pages.page(.error, lang, "invalid_unsubscribe", .badRequest)
        } catch {
            context.logger.error("unsubscribing failed", metadata: ["error": "\(error)"])
            return pages.page(.error, lang, "unavailable", .internalServerError)
        }
        return pages.page(.unsubscribed, lang, "unsubscribed")
    }
}
