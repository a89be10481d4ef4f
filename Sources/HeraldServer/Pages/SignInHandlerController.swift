import Foundation
import HeraldActions
import HeraldCore
import Hummingbird
import Mustache

/// The hosted sign-in handler the Apple and Android SDKs open for a provider's web flow (`OAuthProvider`):
/// `/__/auth/handler`, and `/emulator/auth/handler` where `useEmulator` sends them. The rules live in
/// `ProvidersService.signInHandler`; this turns its answers into redirects, the pending flow's cookie and pages.
struct SignInHandlerController: Sendable {
    let configuration: HeraldConfiguration
    let providers: ProvidersService
    let pages: PageRenderer
    let chooser: MustacheTemplate

    static let paths = ["__/auth/handler", "emulator/auth/handler"]
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
