import Foundation
import HeraldActions
import HeraldCore
import Hummingbird
import Mustache

/// The hosted sign-in handler the SDKs open for a provider's web flow (the JS SDK's popup and redirect, the Apple and
/// Android SDKs' `OAuthProvider`): `/__/auth/handler`, and `/emulator/auth/handler` where `connectAuthEmulator` and
/// `useEmulator` send them. Beside it, the JS SDK's helper iframe (`iframe`) and the scripts of both
/// (`herald-event.js`, `herald-iframe.js`, `herald-gapi.js`). The rules live in `ProvidersService.signInHandler`;
/// this turns its answers into redirects, the pending flow's cookie and pages.
struct SignInHandlerController: Sendable {
    let configuration: HeraldConfiguration
    let providers: ProvidersService
    let pages: PageRenderer
    let chooser: MustacheTemplate

    static let paths = ["__/auth/handler", "emulator/auth/handler"]
    static let directories = ["__/auth", "emulator/auth"]
    /// The sealed pending flow (HttpOnly, SameSite=Lax: the provider's redirect back is a top-level GET).
    static let cookieName = "herald_sign_in"

    init(configuration: HeraldConfiguration, providers: ProvidersService, pages: PageRenderer) throws {
        self.configuration = configuration
        self.providers = providers
        self.pages = pages
        chooser = try PageRenderer.template(at: "\(configuration.templatesDirectory)/pages/provider-chooser.html.mustache")
    }

    var routes: RouteCollection<HeraldRequestContext> {
        let routes = RouteCollection(context: HeraldRequestContext.self)
            .add(middleware: ClientAddressMiddleware(trustedProxies: configuration.limits.trustedProxies))
        for path in Self.paths { routes.get(RouterPath(path), use: handle) }
        let iframe = iframePage
        for directory in Self.directories {
            routes.get(RouterPath("\(directory)/iframe")) { _, _ in iframe.response() }
            for (name, script) in Self.scripts {
                routes.get(RouterPath("\(directory)/\(name)")) { _, _ in Self.javaScript(script) }
            }
        }
        return routes
    }

    @Sendable func handle(_ request: Request, context: HeraldRequestContext) async -> Response {
        let rawQuery = request.uri.query ?? ""
        let language = request.uri.queryParameters.get("hl")
        guard let handlerURL = handlerURL(of: request) else {
            return pages.page(.error, language, "set providers.handlerUrl to the sign-in handler's public URL", .badRequest)
        }
        do {
            let answer = try await providers.signInHandler(
                query: rawQuery, cookie: request.cookies[Self.cookieName]?.value, handlerURL: handlerURL, clientIP: context.clientIP)
            switch answer {
            case .redirect(let location, let cookie):
                var headers: HTTPFields = [.location: location, .cacheControl: "no-store", .init("Referrer-Policy")!: "no-referrer"]
                if let cookie { headers[.setCookie] = Self.cookie(cookie, handlerURL: handlerURL) }
                return Response(status: .found, headers: headers)
            case .chooser(let model):
                return PageRenderer.response(html: chooser.render(ChooserModel(model, action: request.uri.path)))
            case .deliver(let delivery, let cookie):
                var response = Self.eventPage(delivery)
                if let cookie { response.headers[.setCookie] = Self.cookie(cookie, handlerURL: handlerURL) }
                return response
            }
        } catch let error as HeraldError where error.code == .unavailable {
            return pages.page(.error, language, "unavailable", .serviceUnavailable)
        } catch let error as HeraldError {
            return pages.page(.error, language, error.detail, .badRequest)
        } catch {
            context.logger.error("sign-in handler failed", metadata: ["error": "\(type(of: error))"])
            return pages.page(.error, language, "unavailable", .internalServerError)
        }
    }

    static let scripts = [
        ("herald-event.js", WebSignInScripts.event), ("herald-iframe.js", WebSignInScripts.iframe), ("herald-gapi.js", WebSignInScripts.gapi),
    ]

    static func javaScript(_ source: String) -> Response {
        let headers: HTTPFields = [
            .contentType: "text/javascript; charset=utf-8", .cacheControl: "public, max-age=300", .init("X-Content-Type-Options")!: "nosniff",
        ]
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: source)))
    }

    /// The web flow's last page: its script gives the SDK `delivery`'s event. Framed by no one, read by no referrer.
    static func eventPage(_ delivery: WebDelivery) -> Response {
        let html = """
            <!DOCTYPE html>
            <html lang="en">
            <head><meta charset="utf-8"><meta name="robots" content="noindex"><title>Signing in</title></head>
            <body>
            <p id="status">Returning to the app…</p>
            <script type="application/json" id="herald-auth-event">\(delivery.pageJSON)</script>
            <script src="herald-event.js"></script>
            </body>
            </html>
            """
        let headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-store", .init("Referrer-Policy")!: "no-referrer",
            .init("X-Frame-Options")!: "DENY",
            .contentSecurityPolicy: "default-src 'none'; script-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ]
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// The JS SDK's helper iframe. Only pages of the authorized domains may frame it (`frame-ancestors`), and its
    /// script speaks only to such a parent.
    private var iframePage: StaticPage {
        let hosts = AuthorizedHosts(domains: configuration.links.authorizedDomains).names
        let config =
            (try? JSONSerialization.data(withJSONObject: ["hosts": hosts], options: [.sortedKeys, .withoutEscapingSlashes]))
            .map { String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "<", with: "\\u003c") } ?? "{}"
        // CSP cannot name an IPv6 host: [::1] is left to the script's own check.
        let ancestors = hosts.filter { !$0.hasPrefix("[") }.flatMap { ["http://\($0):*", "https://\($0):*"] }
        let html = """
            <!DOCTYPE html>
            <html lang="en">
            <head><meta charset="utf-8"><title>Herald sign-in helper</title>
            <script type="application/json" id="herald-iframe">\(config)</script>
            <script src="herald-iframe.js"></script>
            </head>
            <body></body>
            </html>
            """
        let headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
            .contentSecurityPolicy: "object-src 'none'; base-uri 'none'; frame-ancestors 'self' \(ancestors.joined(separator: " "))",
        ]
        return StaticPage(headers: headers, body: html)
    }

    struct StaticPage: Sendable {
        let headers: HTTPFields
        let body: String

        func response() -> Response {
            Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
        }
    }

    /// `providers.handlerUrl`, or the URL the app opened (`http://` and the Host header, as the SDKs open it under
    /// `useEmulator`) — outside emulator mode only on loopback, where a forged Host header cannot send a provider's
    /// answer elsewhere.
    private func handlerURL(of request: Request) -> String? {
        let configured = configuration.providers.handlerURL
        if !configured.isEmpty { return configured }
        guard let host = request.head.authority, !host.isEmpty, !host.contains("/"), !host.contains("@") else { return nil }
        guard configuration.server.emulatorMode || Self.isLoopback(host) else { return nil }
        return "http://\(host)/\(request.uri.path.drop { $0 == "/" })"
    }

    private static let loopback = [try! IPNetwork("127.0.0.0/8"), try! IPNetwork("::1/128")]

    /// `localhost`, `127.x.x.x` or `[::1]`, with any port.
    static func isLoopback(_ authority: String) -> Bool {
        let host = authority.hasPrefix("[") ? String(authority.prefix { $0 != "]" }.dropFirst()) : String(authority.prefix { $0 != ":" })
        return host.lowercased() == "localhost" || Self.loopback.contains { $0.contains(host) }
    }

    /// The pending flow's cookie, scoped to the handler's path; `""` expires it.
    static func cookie(_ value: String, handlerURL: String) -> String {
        let afterScheme = handlerURL.range(of: "://").map { handlerURL[$0.upperBound...] } ?? handlerURL[...]
        let path = afterScheme.drop { $0 != "/" }.prefix { $0 != "?" && $0 != "#" }
        var cookie = "\(cookieName)=\(value); Path=\(path.isEmpty ? "/" : path); HttpOnly; SameSite=Lax"
        cookie += "; Max-Age=\(value.isEmpty ? 0 : Int(ProvidersService.approvalLifetime))"
        if handlerURL.lowercased().hasPrefix("https://") { cookie += "; Secure" }
        return cookie
    }
}

/// What `provider-chooser.html.mustache` shows.
struct ChooserModel {
    struct Field { let name: String; let value: String }
    struct Account { let sub: String; let email: String; let name: String; let screenName: String }
    let providerId: String
    let action: String
    let hidden: [Field]
    let accounts: [Account]

    init(_ chooser: ProviderChooser, action: String) {
        providerId = chooser.providerId
        self.action = action
        hidden = chooser.query.map { Field(name: $0.0, value: $0.1) }
        accounts = chooser.accounts.map {
            Account(sub: $0.rawId, email: $0.email ?? "", name: $0.displayName ?? "", screenName: $0.screenName ?? "")
        }
    }
}
