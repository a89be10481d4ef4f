import Foundation
import HeraldCore
import Synchronization

/// The web page a JS SDK flow returns to (`signInWithPopup`, `signInWithRedirect`, `linkWithPopup`, …): the
/// handler's `appName` and `redirectUrl` (the page's own URL), and `tid`.
///
/// The page's host must be an authorized domain (`links.authorizedDomains`; `localhost` also admits 127.0.0.1
/// and [::1], as for CORS): the handler hands the provider's answer only to such a page.
public struct WebReturn: Sendable, Hashable, Codable {
    /// The page that opened the flow, as a browser serializes it: where a redirect sign-in returns.
    public var redirectURL: String
    /// `scheme://host[:port]` of that page.
    public var origin: String
    /// The SDK's app name: with the API key, the key under which the page's SDK looks for its event.
    public var appName: String
    public var tenantId: String?

    /// - Throws: `INVALID_ARGUMENT` for a missing or malformed `redirectUrl`; `UNAUTHORIZED_DOMAIN` for a page
    ///   whose host is not an authorized domain.
    init(query: [String: String], authorizedDomains: [String]) throws {
        guard let name = query["appName"], !name.isEmpty, name.utf8.count <= 256 else {
            throw HeraldError(.invalidArgument, "the sign-in handler needs the app's appName")
        }
        guard let text = query["redirectUrl"], !text.isEmpty, let page = WebURL(text) else {
            throw HeraldError(.invalidArgument, "the sign-in handler needs the page's redirectUrl, an http(s) URL")
        }
        guard AuthorizedHosts(domains: authorizedDomains).contains(page.host) else {
            throw HeraldError(
                .unauthorizedDomain, "the page's domain \(page.host) is not an authorized domain (links.authorizedDomains)")
        }
        redirectURL = page.href
        origin = "\(page.scheme)://\(page.host)" + (page.port.map { ":\($0)" } ?? "")
        appName = name
        tenantId = query["tid"].flatMap { $0.isEmpty ? nil : String($0.prefix(128)) }
    }
}

/// What the JS SDK receives from the handler (its `AuthEvent`): through the helper iframe to the page that opened
/// the popup, or, after a redirect, from the page's session storage.
public struct WebAuthEvent: Sendable, Hashable, Encodable {
    public struct Failure: Sendable, Hashable, Encodable {
        /// `auth/…`, as the SDK names its errors.
        public var code: String
        public var message: String
    }

    /// The SDK's `authType` (`signInViaPopup`, `linkViaRedirect`, …).
    public var type: String
    public var eventId: String?
    /// The link the SDK presents to `signInWithIdp` as `requestUri`.
    public var urlResponse: String?
    /// The session id the SDK presents with it (the handler made it: the JS SDK sends none).
    public var sessionId: String?
    public var postBody: String?
    public var tenantId: String?
    public var error: Failure?
}

/// The page the handler answers a web flow with: it gives `event` to the page that opened the flow.
public struct WebDelivery: Sendable {
    public var event: WebAuthEvent
    public var page: WebReturn
    /// A popup hands the event to the opener's helper iframe; a redirect stores it and returns to the page.
    public var popup: Bool
    /// `apiKey:appName`: the session-storage key, and how the popup finds its helper iframe.
    public var storageKey: String

    /// What the event page's script reads (`event`, `popup`, `redirectUrl`, `storageKey`, `origin`), as JSON that is
    /// safe inside a `<script type="application/json">` block.
    public var pageJSON: String {
        struct Page: Encodable {
            let event: WebAuthEvent
            let popup: Bool
            let redirectUrl: String
            let storageKey: String
            let origin: String
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let page = Page(event: event, popup: popup, redirectUrl: page.redirectURL, storageKey: storageKey, origin: page.origin)
        let json = (try? encoder.encode(page)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return json.replacingOccurrences(of: "<", with: "\\u003c").replacingOccurrences(of: ">", with: "\\u003e")
            .replacingOccurrences(of: "&", with: "\\u0026")
    }
}

extension HandlerFlow {
    /// Hands `link` to the app: a redirect to its callback, or, for a web page, the event page.
    func answer(link: String, origin: String, cookie: String?, apiKey: String) -> HandlerAnswer {
        guard case .web(let page) = app else { return .redirect(returning(link: link, origin: origin), cookie: cookie) }
        let event = WebAuthEvent(
            type: authType, eventId: eventId.isEmpty ? nil : eventId, urlResponse: link, sessionId: session.sent, postBody: "",
            tenantId: page.tenantId)
        return .deliver(delivery(event, page: page, apiKey: apiKey), cookie: cookie)
    }

    /// Tells the app why the sign-in stopped.
    func answer(error: HeraldError, origin: String, cookie: String?, apiKey: String) -> HandlerAnswer {
        guard case .web(let page) = app else { return .redirect(returning(error: error, origin: origin), cookie: cookie) }
        let event = WebAuthEvent(
            type: authType, eventId: eventId.isEmpty ? nil : eventId, tenantId: page.tenantId,
            error: WebAuthEvent.Failure(code: AppReturn.sdkCode(of: error), message: "\(error.code) : \(error.detail)"))
        return .deliver(delivery(event, page: page, apiKey: apiKey), cookie: cookie)
    }

    private func delivery(_ event: WebAuthEvent, page: WebReturn, apiKey: String) -> WebDelivery {
        WebDelivery(
            event: event, page: page, popup: authType.range(of: "popup", options: .caseInsensitive) != nil,
            storageKey: "\(apiKey):\(page.appName)")
    }
}

extension AppReturn {
    /// Whether the flow returns to a web page (the JS SDK).
    var isWeb: Bool {
        if case .web = self { true } else { false }
    }
}

/// The handler assertions already presented to `verifyAssertion`, each kept until it would have expired anyway.
///
/// Held by the process: with several Herald nodes behind one address, an assertion could be presented once to each.
final class SpentAssertions: Sendable {
    private let spent = Mutex<[String: Date]>([:])

    /// Records `digest`; false when it is already recorded and not yet past its time.
    func spend(_ digest: String, until expiry: Date, now: Date) -> Bool {
        spent.withLock { spent in
            if spent.count > 4096 { spent = spent.filter { $0.value > now } }
            if let until = spent[digest], until > now { return false }
            spent[digest] = expiry
            return true
        }
    }
}
