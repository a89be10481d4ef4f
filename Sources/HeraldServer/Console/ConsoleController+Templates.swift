import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import Hummingbird

/// `/admin/templates`: every action in every locale as the recipient sees it, and a test message to an address.
extension ConsoleController {
    @Sendable func templates(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let rows = console.templateLocales.flatMap { kind, locales in
            locales.map { locale in
                let href = "/admin/templates/\(kind.rawValue)/\(ConsolePage.escape(locale.value))"
                return """
                    <tr data-action="\(kind.rawValue)" data-locale="\(ConsolePage.escape(locale.value))"><td>\(kind.rawValue)</td>\
                    <td>\(ConsolePage.escape(locale.value))</td><td><a href="\(href)">preview</a></td></tr>
                    """
            }
        }
        let body = ConsolePage.table(id: "templates", ["Action", "Locale", ""], rows)
        return ConsolePage.response(ConsolePage.html("Templates", body, session: context.consoleSession, current: "templates"))
    }

    /// The action and locale a template path names. - Throws: `NOT_FOUND`.
    private func templateTarget(_ context: HeraldRequestContext) throws -> (ActionKind, LocaleTag) {
        guard let kind = context.parameters.get("action").flatMap(ActionKind.init(rawValue:)),
            let locale = context.parameters.get("locale").flatMap({ try? LocaleTag($0) }),
            console.templateLocales.first(where: { $0.kind == kind })?.locales.contains(locale) == true
        else { throw HeraldError(.notFound, "no such template") }
        return (kind, locale)
    }

    @Sendable func template(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        templatePage(context: context, notice: nil, error: nil)
    }

    private func templatePage(context: HeraldRequestContext, notice: String?, error: String?, status: HTTPResponse.Status = .ok) -> Response {
        let kind: ActionKind
        let locale: LocaleTag
        let content: RenderedContent
        do {
            (kind, locale) = try templateTarget(context)
            content = try console.preview(kind, locale: locale)
        } catch {
            return failure(error, "Template", context: context)
        }
        let base = "/admin/templates/\(kind.rawValue)/\(ConsolePage.escape(locale.value))"
        let csrf = context.consoleSession?.csrf ?? ""
        let direction = content.locale.isRightToLeft ? "rtl" : "ltr"
        let lang = ConsolePage.escape(content.locale.value)
        let sendTest = ConsolePage.changing(
            """
            <form id="send-test" class="filters" method="post" action="\(base)/test">
            <input type="hidden" name="csrf" value="\(ConsolePage.escape(csrf))">
            <label>Send a test to <input name="email" type="email" required placeholder="you@example.com"></label>
            <button id="send-test-button" type="submit">Send test</button></form>
            """)
        let body = """
            \(ConsolePage.notice(notice))\(ConsolePage.error(error))
            <p class="muted">Sample data; the link carries a code that redeems nothing.</p>
            <p>Subject: <strong id="subject" lang="\(lang)" dir="\(direction)">\(ConsolePage.escape(content.subject))</strong></p>
            \(sendTest)
            <h2>HTML</h2><iframe id="preview" title="HTML part" sandbox src="\(base)/html"></iframe>
            <h2>Text</h2><pre id="text" lang="\(lang)" dir="\(direction)">\(ConsolePage.escape(content.text))</pre>
            """
        let title = "\(kind.rawValue) · \(locale.value)"
        return ConsolePage.response(ConsolePage.html(title, body, session: context.consoleSession, current: "templates"), status: status)
    }

    /// The HTML part alone, framed by the preview page: no scripts, framable only by the console.
    @Sendable func templateHTML(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let content: RenderedContent
        do {
            let (kind, locale) = try templateTarget(context)
            content = try console.preview(kind, locale: locale)
        } catch {
            return failure(error, "Template", context: context)
        }
        let headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
            .contentSecurityPolicy:
                "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; form-action 'none'; sandbox; frame-ancestors 'self'",
            .init("X-Frame-Options")!: "SAMEORIGIN", .init("X-Content-Type-Options")!: "nosniff",
            .init("Referrer-Policy")!: "no-referrer",
        ]
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: content.html)))
    }

    struct TestFields: Decodable {
        var email: String?
    }

    /// `POST …/test`: the sample message to one address, through the relay, now; the page shows its answer.
    @Sendable func sendTest(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        var request = request
        let email = nonEmpty(try await ConsoleForm.read(&request, as: TestFields.self)?.email) ?? ""
        let target: (ActionKind, LocaleTag)
        do {
            target = try templateTarget(context)
        } catch {
            return failure(error, "Template", context: context)
        }
        do {
            let result = try await offload { try console.sendTemplateTest(target.0, locale: target.1, to: email) }
            let reply = [result.replyCode.map(String.init), result.replyText].compactMap { $0 }.joined(separator: " ")
            logAction(
                "template test sent", target: "\(target.0.rawValue)/\(target.1.value)", result: result.outcome == .sent ? .ok : .failed,
                context: context, ["outcome": "\(result.outcome.rawValue)"])
            guard result.outcome == .sent else {
                return templatePage(context: context, notice: nil, error: "The relay did not take it: \(reply)", status: .badGateway)
            }
            return templatePage(context: context, notice: "Sent to \(email): \(reply)", error: nil)
        } catch let error as HeraldError where error.code != .unavailable {
            return templatePage(context: context, notice: nil, error: error.description, status: .badRequest)
        } catch {
            return failure(error, "Template", context: context)
        }
    }
}
