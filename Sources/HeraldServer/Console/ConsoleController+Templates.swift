import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import Hummingbird

/// `/admin/templates`: every action in every locale as the recipient sees it, a test message to an address, and the
/// editor (`ConsoleController+TemplateEditing.swift`).
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
    func templateTarget(_ context: HeraldRequestContext) throws -> (ActionKind, LocaleTag) {
        guard let kind = context.parameters.get("action").flatMap(ActionKind.init(rawValue:)),
            let locale = context.parameters.get("locale").flatMap({ try? LocaleTag($0) }),
            console.templateLocales.first(where: { $0.kind == kind })?.locales.contains(locale) == true
        else { throw HeraldError(.notFound, "no such template") }
        return (kind, locale)
    }

    @Sendable func template(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let done = request.uri.queryParameters["done"].map(String.init).flatMap { Self.templateNotices[$0] }
        return await templatePage(context: context, notice: done, error: nil)
    }

    /// What a finished change says on the page it returns to (never text from the request).
    static let templateNotices = [
        "saved": "Saved: the worker sends it from its next read of the ledger, within a minute.",
        "reverted": "Reverted: the worker sends it from its next read of the ledger, within a minute.",
    ]

    /// The page of one template: the sample as the recipient sees it (or `draft`'s rendering, unsaved), a test send,
    /// the editor and the history. `draft` is the editor's text when it differs from what is in force.
    func templatePage(
        context: HeraldRequestContext, notice: String?, error: String?, draft: (parts: TemplateParts, content: RenderedContent?)? = nil,
        status: HTTPResponse.Status = .ok
    ) async -> Response {
        let kind: ActionKind
        let locale: LocaleTag
        let content: RenderedContent
        let source: (parts: TemplateParts, revision: TemplateRevision?)
        let history: [TemplateRevision]
        do {
            (kind, locale) = try templateTarget(context)
            let loaded = try await offload { [console] in
                (
                    try console.preview(kind, locale: locale), try console.templateSource(kind, locale: locale),
                    try console.templateHistory(kind, locale: locale)
                )
            }
            (content, source, history) = loaded
        } catch {
            return failure(error, "Template", context: context)
        }
        let base = "/admin/templates/\(kind.rawValue)/\(ConsolePage.escape(locale.value))"
        let csrf = context.consoleSession?.csrf ?? ""
        let shown = draft?.content ?? content
        let direction = shown.locale.isRightToLeft ? "rtl" : "ltr"
        let lang = ConsolePage.escape(shown.locale.value)
        let sendTest = ConsolePage.changing(
            """
            <form id="send-test" class="filters" method="post" action="\(base)/test">
            <input type="hidden" name="csrf" value="\(ConsolePage.escape(csrf))">
            <label>Send a test to <input name="email" type="email" required placeholder="you@example.com"></label>
            <button id="send-test-button" type="submit">Send test</button></form>
            """)
        let frame =
            draft?.content.map { #"<iframe id="preview" title="HTML part (unsaved)" sandbox srcdoc="\#(ConsolePage.escape($0.html))"></iframe>"# }
            ?? #"<iframe id="preview" title="HTML part" sandbox src="\#(base)/html"></iframe>"#
        let sample =
            draft?.content != nil
            ? #"<p class="notice" id="draft-notice">A preview of your unsaved text: nothing is saved until you press Save.</p>"#
            : #"<p class="muted">Sample data; the link carries a code that redeems nothing.</p>"#
        let body = """
            \(ConsolePage.notice(notice))\(ConsolePage.error(error))
            \(sample)
            <p>Subject: <strong id="subject" lang="\(lang)" dir="\(direction)">\(ConsolePage.escape(shown.subject))</strong></p>
            \(sendTest)
            <h2>HTML</h2>\(frame)
            <h2>Text</h2><pre id="text" lang="\(lang)" dir="\(direction)">\(ConsolePage.escape(shown.text))</pre>
            \(Self.templateEditor(base: base, csrf: csrf, parts: draft?.parts ?? source.parts, inForce: source.revision))
            \(Self.templateHistory(base: base, csrf: csrf, history: history))
            """
        let title = "\(kind.rawValue) · \(locale.value)"
        return ConsolePage.response(ConsolePage.html(title, body, session: context.consoleSession, current: "templates"), status: status)
    }

    /// The HTML part alone, framed by the preview page: no scripts, framable only by the console.
    @Sendable func templateHTML(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let content: RenderedContent
        do {
            let (kind, locale) = try templateTarget(context)
            content = try await offload { [console] in try console.preview(kind, locale: locale) }
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
                return await templatePage(context: context, notice: nil, error: "The relay did not take it: \(reply)", status: .badGateway)
            }
            return await templatePage(context: context, notice: "Sent to \(email): \(reply)", error: nil)
        } catch let error as HeraldError where error.code != .unavailable {
            return await templatePage(context: context, notice: nil, error: error.description, status: .badRequest)
        } catch {
            return failure(error, "Template", context: context)
        }
    }
}
