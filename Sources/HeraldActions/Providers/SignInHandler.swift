import Crypto
import Foundation
import HeraldCore

/// The hosted sign-in handler's request: `GET /__/auth/handler` (or `/emulator/auth/handler` under
/// `useEmulator` / `connectAuthEmulator`) with `apiKey`, `providerId`, `authType`, `eventId`, optionally `scopes`,
/// `customParameters` (JSON) and `hl`, and the app to return to:
/// - the Apple and Android SDKs (`OAuthProvider.getCredentialWith`, `signInWithProvider`): `sessionId` and
///   `ibi` with `clientId` or `appId`, or `apn`;
/// - the JS SDK (`signInWithPopup`, `signInWithRedirect`, `linkWithPopup`, …): `appName`, `redirectUrl` and `tid`.
public struct HandlerStart: Sendable, Hashable {
    /// What the handler keeps until the browser returns from the provider.
    public var flow: HandlerFlow
    /// Extra provider parameters (`lang`, `login_hint`, …), the reserved OAuth ones removed.
    public var customParameters: [String: String]
    public var scopes: [String]

    public var providerId: String { flow.providerId }

    /// Parameters Herald sets itself: an app cannot pass them to the provider.
    static let reservedParameters: Set<String> = [
        "client_id", "client_secret", "redirect_uri", "response_type", "response_mode", "scope", "state", "nonce", "request",
        "request_uri", "code_challenge", "code_challenge_method", "oauth_token", "oauth_callback", "oauth_verifier",
    ]

    /// - Throws: `INVALID_ARGUMENT` naming what is missing or malformed (the handler shows it on a page: with
    ///   no app to return to, there is nowhere else to say it).
    /// - Parameter authorizedDomains: `links.authorizedDomains`, which a web page's host must be in.
    public init(query: [String: String], apiKey: String, authorizedDomains: [String] = []) throws {
        guard let key = query["apiKey"], Secret.equal(key, apiKey) else {
            throw HeraldError(.invalidArgument, "API key not valid. Please pass a valid API key.")
        }
        // Provider ids as Firebase writes them: google.com, twitter.com, oidc.<name>, saml.<name>.
        guard let provider = query["providerId"]?.lowercased(),
            provider.range(of: "^[a-z0-9][a-z0-9._-]{0,99}$", options: .regularExpression) != nil
        else {
            throw HeraldError(.invalidArgument, "the sign-in handler needs a providerId such as twitter.com or oidc.example")
        }
        let app = try AppReturn(query: query, authorizedDomains: authorizedDomains)
        let session: HandlerSession
        if case .web = app {
            // The JS SDK sends none: the handler makes one, which the page receives with the event.
            session = HandlerSession(sent: ActionCode.generate().plaintext, hashed: false)
        } else {
            guard let sent = query["sessionId"], !sent.isEmpty, sent.utf8.count <= 256 else {
                throw HeraldError(.invalidArgument, "the sign-in handler needs the app's sessionId")
            }
            session = HandlerSession(app: app, sent: sent)
        }
        flow = HandlerFlow(
            providerId: provider, authType: String((query["authType"] ?? "signInWithRedirect").prefix(64)),
            eventId: String((query["eventId"] ?? "").prefix(128)), session: session, app: app)
        var custom: [String: String] = [:]
        if let json = query["customParameters"], !json.isEmpty {
            guard json.utf8.count <= 2048, let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else {
                throw HeraldError(.invalidArgument, "customParameters must be a JSON object of at most 2048 bytes")
            }
            for (name, value) in object where !Self.reservedParameters.contains(name) {
                custom[name] = (value as? String) ?? "\(value)"
            }
        }
        customParameters = custom
        let scopeList = query["scopes"] ?? ""
        guard scopeList.utf8.count <= 1024 else { throw HeraldError(.invalidArgument, "scopes are longer than 1024 bytes") }
        scopes = scopeList.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// The part of a handler request that must survive the provider: who to return to, and how to know them again.
public struct HandlerFlow: Sendable, Hashable, Codable {
    public var providerId: String
    public var authType: String
    public var eventId: String
    public var session: HandlerSession
    public var app: AppReturn

    /// The URL that hands `link` (the provider's answer, for `verifyAssertion`'s `requestUri`) back to the app.
    func returning(link: String, origin: String) -> String {
        app.url(authType: authType, eventId: eventId, origin: origin, link: link)
    }

    /// The URL that tells the app why the sign-in stopped.
    func returning(error: HeraldError, origin: String) -> String {
        app.url(authType: authType, eventId: eventId, origin: origin, error: error)
    }
}

/// How the app proves, at `verifyAssertion`, that it started the flow. The Apple SDK sends the handler the
/// SHA-256 (hex) of a session id it keeps and presents the id itself later; the Android SDK sends the same value
/// both times.
public struct HandlerSession: Sendable, Hashable, Codable {
    /// What the handler received.
    var sent: String
    /// Whether `sent` is the hex SHA-256 of what the app presents later.
    var hashed: Bool

    init(app: AppReturn, sent: String) {
        switch app {
        case .apple: self.init(sent: sent.lowercased(), hashed: true)
        case .android, .web: self.init(sent: sent, hashed: false)
        }
    }

    init(sent: String, hashed: Bool) {
        self.sent = sent
        self.hashed = hashed
    }

    /// Whether `sessionId`, as the app presents it to `verifyAssertion`, is the one this flow was started with.
    func matches(_ sessionId: String?) -> Bool {
        guard let sessionId, !sessionId.isEmpty else { return false }
        guard hashed else { return Secret.equal(sessionId, sent) }
        return Secret.equal(Hex.sha256(sessionId), sent)
    }
}

/// Where the handler sends the browser back: the app that opened it.
public enum AppReturn: Sendable, Hashable, Codable {
    /// `<scheme>://<host>/link?deep_link_id=…`: the scheme is the reversed OAuth client id (`clientId`),
    /// `app-<Firebase app id with : as ->` (`appId`), or the bundle id itself (host `google`).
    case apple(scheme: String, host: String)
    /// `intent://firebase.auth/#Intent;scheme=genericidp;package=<apn>;…;end;`.
    case android(package: String)
    /// A web page: the JS SDK's popup and redirect flows, answered with an event page (`HandlerFlow.answer`).
    case web(WebReturn)

    init(query: [String: String], authorizedDomains: [String]) throws {
        if let bundle = query["ibi"], !bundle.isEmpty {
            let scheme: String
            let host: String
            if let client = query["clientId"], !client.isEmpty {
                scheme = client.split(separator: ".").reversed().joined(separator: ".")
                host = "firebaseauth"
            } else if let appID = query["appId"], !appID.isEmpty {
                scheme = "app-" + appID.replacingOccurrences(of: ":", with: "-")
                host = "firebaseauth"
            } else {
                scheme = bundle
                host = "google"
            }
            // RFC 3986 §3.1: a letter, then letters, digits, "+", "-" and ".".
            guard scheme.range(of: "^[A-Za-z][A-Za-z0-9+.-]{0,199}$", options: .regularExpression) != nil,
                !["http", "https", "javascript", "data", "file", "blob", "about", "intent"].contains(scheme.lowercased())
            else {
                throw HeraldError(.invalidArgument, "the app's callback scheme '\(scheme)' is not a custom URL scheme")
            }
            self = .apple(scheme: scheme, host: host)
        } else if let package = query["apn"], !package.isEmpty {
            guard package.range(of: "^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)+$", options: .regularExpression) != nil else {
                throw HeraldError(.invalidArgument, "'\(package)' is not an Android package name")
            }
            self = .android(package: package)
        } else if query["appName"] != nil || query["redirectUrl"] != nil {
            self = .web(try WebReturn(query: query, authorizedDomains: authorizedDomains))
        } else {
            throw HeraldError(
                .invalidArgument,
                "the sign-in handler needs the app to return to: the JS SDK's appName and redirectUrl, the Apple SDK's ibi or the Android SDK's apn"
            )
        }
    }

    /// The name `providers.appCallbacks` lists to allow this app: its URL scheme, or its Android package (a web
    /// page's origin, whose host `links.authorizedDomains` allows instead).
    public var callbackName: String {
        switch self {
        case .apple(let scheme, _): scheme
        case .android(let package): package
        case .web(let page): page.origin
        }
    }

    /// The URL that hands `link` (the provider's answer, for `verifyAssertion`'s `requestUri`) back to the app.
    func url(authType: String, eventId: String, origin: String, link: String) -> String {
        url(authType: authType, eventId: eventId, origin: origin, field: ("link", link))
    }

    /// The URL that tells the app the sign-in failed: Firebase's `firebaseError` (`{"code": "auth/…", "message": …}`).
    func url(authType: String, eventId: String, origin: String, errorCode: String, message: String) -> String {
        let json =
            (try? JSONSerialization.data(withJSONObject: ["code": errorCode, "message": message], options: [.sortedKeys, .withoutEscapingSlashes]))
            .map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return url(authType: authType, eventId: eventId, origin: origin, field: ("firebaseError", json))
    }

    private func url(authType: String, eventId: String, origin: String, field: (String, String)) -> String {
        let enc = { (text: String) in PercentEncoding.encode(text) }
        switch self {
        case .apple(let scheme, let host):
            // The SDK checks the inner URL's authType and eventId, then reads its link (or firebaseError).
            var inner = "\(origin)/__/auth/callback?authType=\(enc(authType))&\(field.0)=\(enc(field.1))"
            if !eventId.isEmpty { inner += "&eventId=\(enc(eventId))" }
            return "\(scheme)://\(host)/link?deep_link_id=\(enc(inner))"
        case .android(let package):
            var intent = "intent://firebase.auth/#Intent;scheme=genericidp;package=\(package);S.authType=\(enc(authType));"
            if !eventId.isEmpty { intent += "S.eventId=\(enc(eventId));" }
            return intent + "S.\(field.0)=\(enc(field.1));B.encryptionEnabled=false;end;"
        case .web(let page):
            // Not reached: a web page receives an event page instead (`HandlerFlow.answer`).
            return page.redirectURL
        }
    }
}

/// What the handler keeps between sending the browser to the provider and its return: in an HttpOnly cookie,
/// sealed, so that any Herald node can finish the flow and nothing about it rests on disk.
struct PendingApproval: Codable, Sendable {
    var flow: HandlerFlow
    /// Where the provider returns the browser (the handler's own URL).
    var callback: String
    /// OAuth 1.0a: the request token and its secret.
    var requestToken: String?
    var requestSecret: String?
    /// OIDC: the `state`, `nonce` and PKCE `code_verifier` of the authorization request.
    var state: String?
    var nonce: String?
    var codeVerifier: String?
    var expires: Date
}

/// What the provider gave the handler, sealed into the link the app receives; `verifyAssertion` opens it with
/// the app's session id and verifies it as it would a credential from the app itself.
struct ApprovedAssertion: Codable, Sendable {
    var providerId: String
    var session: HandlerSession
    var idToken: String?
    var accessToken: String?
    var tokenSecret: String?
    var nonce: String?
    var expires: Date
}

/// AES-256-GCM sealing of the handler's state under a key derived from the server's (`server.tokenSecret`):
/// tamper-proof and unreadable outside Herald. Each purpose is bound as associated data, so a sealed
/// cookie cannot pass for a sealed assertion.
struct FlowSeal: Sendable {
    let key: SymmetricKey

    init(serverKey: SymmetricKey) {
        key = HKDF<SHA256>.deriveKey(inputKeyMaterial: serverKey, info: Data("herald sign-in handler".utf8), outputByteCount: 32)
    }

    func seal<Value: Encodable>(_ value: Value, purpose: String) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        let box = try AES.GCM.seal(try encoder.encode(value), using: key, authenticating: Data(purpose.utf8))
        return Base64URL.encode(Array(box.combined!))
    }

    /// - Throws: `INVALID_IDP_RESPONSE` when the text was not sealed by this server for this purpose.
    func open<Value: Decodable>(_ text: String, as type: Value.Type, purpose: String) throws -> Value {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        guard let data = Base64URL.decode(text), let box = try? AES.GCM.SealedBox(combined: data),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Data(purpose.utf8)),
            let value = try? decoder.decode(type, from: plain)
        else {
            throw HeraldError(.invalidIDPResponse, "the sign-in handler's \(purpose) was not issued by this server")
        }
        return value
    }
}
