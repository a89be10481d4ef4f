import Foundation
import HeraldMail
import Hummingbird

/// The console's HTML: one layout (navigation, sign-out, styles), small builders for tables and forms, and
/// responses with the console's headers. Every value is escaped where it enters the page.
enum ConsolePage {
    static func escape(_ text: String) -> String { HTMLText.escape(text) }

    /// Whether the page being rendered is for a session that may change things. `ConsoleAuthMiddleware` binds it for
    /// each request from the session's role; `form(…)` and `changing(_:)` then leave out what a read-only session
    /// could only be refused (its `POST`s answer 403 all the same).
    @TaskLocal static var canChange = true

    /// `html` (a hand-written change form) for a session that may change things, else nothing.
    static func changing(_ html: @autoclosure () -> String) -> String { canChange ? html() : "" }

    /// A whole page: `body` inside the layout, with the navigation when signed in.
    static func html(
        _ title: String, _ body: String, session: ConsoleSessions.Session?, current: String = "",
        refresh: (seconds: Int, url: String)? = nil, style extraStyle: String = ""
    ) -> String {
        let links = [
            ("overview", "/admin/", "Overview"), ("campaigns", "/admin/campaigns", "Campaigns"),
            ("messages", "/admin/messages", "Messages"), ("audit", "/admin/audit/search", "Audit"),
            ("templates", "/admin/templates", "Templates"),
            ("suppressions", "/admin/console/suppressions", "Suppressions"), ("webhooks", "/admin/console/webhooks", "Webhooks"),
            ("activity", "/admin/console/activity", "Activity"),
        ]
        let nav =
            session.map { session in
                let items = links.map { id, href, label in
                    #"<a id="nav-\#(id)" href="\#(href)"\#(id == current ? #" aria-current="page""# : "")>\#(label)</a>"#
                }.joined()
                let role = session.readOnly ? #"<span id="read-only" class="role">read-only</span>"# : ""
                return #"<nav id="nav"><strong>Herald</strong>\#(items)\#(role)"#
                    + postForm(id: "sign-out", action: "/admin/sign-out", csrf: session.csrf, button: "Sign out") + "</nav>"
            } ?? #"<nav id="nav"><strong>Herald</strong></nav>"#
        // To a fixed URL: a notice in the query string is shown once, not on every refresh.
        let meta = refresh.map { #"<meta http-equiv="refresh" content="\#($0.seconds); url=\#($0.url)">"# } ?? ""
        return """
            <!DOCTYPE html>
            <html lang="en" dir="ltr"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            \(meta)<title>\(escape(title)) · Herald</title><style>\(style)\(extraStyle)</style></head>
            <body>\(nav)<main><h1>\(escape(title))</h1>
            \(body)
            </main></body></html>
            """
    }

    /// The layout's styles. Narrow screens (down to 360 px) get no horizontal scroll of the page: the navigation
    /// wraps, long values break, and a table wider than the screen scrolls inside itself (`main table` is its own
    /// scroll box, also for the campaign report's tables).
    static let style = """
        body{font-family:-apple-system,'Segoe UI',Roboto,'Noto Sans',Arial,sans-serif;margin:0;color:#1f2937;background:#f3f4f6}
        nav{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:center;background:#111827;color:#f9fafb;padding:10px 24px}
        nav a{color:#d1d5db;text-decoration:none;padding:2px 0} nav a[aria-current]{color:#fff;font-weight:600}
        nav form{margin-inline-start:auto} main{padding:20px 24px;max-width:1200px;overflow-wrap:anywhere}
        h1{font-size:22px;margin:0 0 16px} h2{font-size:17px;margin:22px 0 8px}
        table{border-collapse:collapse;background:#fff;margin:0 0 16px;font-size:14px}
        main table{display:inline-block;vertical-align:top;max-width:100%;overflow-x:auto;overflow-wrap:normal}
        td,th{border:1px solid #e5e7eb;padding:5px 10px;text-align:start;vertical-align:top} th{background:#f9fafb}
        form.inline{display:inline} form.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:end;margin-bottom:16px}
        label{display:flex;flex-direction:column;font-size:13px;gap:3px}
        input,select,button,textarea{font:inherit;padding:5px 8px;border:1px solid #d1d5db;border-radius:6px;max-width:100%;box-sizing:border-box}
        button{background:#2563eb;color:#fff;border-color:#2563eb;cursor:pointer} button.cancel{background:#b91c1c;border-color:#b91c1c}
        nav button{background:transparent;border-color:#4b5563} nav .role{border:1px solid #f59e0b;color:#fcd34d;border-radius:6px;padding:1px 8px;font-size:13px}
        .notice{background:#ecfdf5;border:1px solid #10b981;padding:8px 12px;border-radius:6px}
        .error{background:#fef2f2;border:1px solid #ef4444;padding:8px 12px;border-radius:6px}
        .cards{display:flex;gap:12px;flex-wrap:wrap} .card{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:10px 16px}
        .muted{color:#6b7280} dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:4px 16px;background:#fff;padding:12px 16px}
        dt{color:#6b7280} dd{margin:0;min-width:0} iframe{width:100%;height:520px;border:1px solid #e5e7eb;background:#fff;box-sizing:border-box}
        pre{background:#fff;border:1px solid #e5e7eb;padding:12px;white-space:pre-wrap}
        @media (max-width:600px){nav{padding:8px 12px;gap:6px 14px} main{padding:14px 12px} h1{font-size:19px} main table{margin-inline-end:0}
        dl{grid-template-columns:minmax(0,1fr);padding:10px 12px} dd{margin-bottom:6px}}
        """

    /// A `POST` form of hidden fields and one button, carrying the CSRF token; nothing for a read-only session
    /// (`canChange`), so every change button is built here.
    static func form(
        id: String? = nil, action: String, csrf: String, fields: [String: String] = [:], button: String, buttonClass: String? = nil
    ) -> String {
        changing(postForm(id: id, action: action, csrf: csrf, fields: fields, button: button, buttonClass: buttonClass))
    }

    /// `form(…)` whatever the role: signing out.
    private static func postForm(
        id: String?, action: String, csrf: String, fields: [String: String] = [:], button: String, buttonClass: String? = nil
    ) -> String {
        let hidden = ([("csrf", csrf)] + fields.sorted { $0.key < $1.key }).map { name, value in
            #"<input type="hidden" name="\#(escape(name))" value="\#(escape(value))">"#
        }.joined()
        let idAttribute = id.map { #" id="\#($0)""# } ?? ""
        let classAttribute = buttonClass.map { #" class="\#($0)""# } ?? ""
        return #"<form class="inline"\#(idAttribute) method="post" action="\#(escape(action))">\#(hidden)"#
            + #"<button type="submit"\#(classAttribute)>\#(escape(button))</button></form>"#
    }

    /// A table with a header row; `rows` are already-built `<tr>` elements.
    static func table(id: String, _ headers: [String], _ rows: [String], empty: String = "Nothing yet.") -> String {
        guard !rows.isEmpty else { return #"<p class="muted" id="\#(id)-empty">\#(escape(empty))</p>"# }
        let head = headers.map { "<th>\(escape($0))</th>" }.joined()
        return #"<table id="\#(id)"><tr>\#(head)</tr>\#(rows.joined())</table>"#
    }

    /// `<option>`s of a select, with `selected` marked; the first is "any".
    static func options(_ values: [String], selected: String?) -> String {
        (["<option value=\"\">any</option>"]
            + values.map { value in
                #"<option value="\#(escape(value))"\#(value == selected ? " selected" : "")>\#(escape(value))</option>"#
            }).joined()
    }

    /// A notice (`p#notice`) or an error (`p#error`) line.
    static func notice(_ text: String?) -> String { text.map { #"<p class="notice" id="notice">\#(escape($0))</p>"# } ?? "" }
    static func error(_ text: String?) -> String { text.map { #"<p class="error" id="error">\#(escape($0))</p>"# } ?? "" }

    /// A page response with the console's headers.
    static func response(_ html: String, status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:]) -> Response {
        var headers = Self.headers
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// A page saying one thing, without the navigation (for refusals before a session is known).
    static func message(_ title: String, _ text: String, status: HTTPResponse.Status) -> Response {
        response(html(title, error(text) + #"<p><a href="/admin/">Back to the console</a></p>"#, session: nil), status: status)
    }

    /// `303 See Other` to `location` (after a form, or to the sign-in form).
    static func redirect(to location: String, headers extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [.location: location, .cacheControl: "no-store"]
        headers.append(contentsOf: extra)
        return Response(status: .seeOther, headers: headers)
    }

    /// No caching, no framing, no scripts: only the page's own styles, forms and (templates) preview frames.
    static let headers: HTTPFields = [
        .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
        .contentSecurityPolicy:
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; frame-src 'self'; form-action 'self'; "
            + "base-uri 'none'; frame-ancestors 'none'",
        .init("Referrer-Policy")!: "no-referrer", .init("X-Frame-Options")!: "DENY", .init("X-Content-Type-Options")!: "nosniff",
    ]
}
