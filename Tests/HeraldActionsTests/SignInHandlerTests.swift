import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldActions

@Suite struct SignInHandlerTests {
    static let base = ["apiKey": "k", "providerId": "Twitter.com", "sessionId": "ABCDEF", "eventId": "e1"]

    @Test func theCallbackSchemeIsDerivedAsTheAppleSDKRegistersIt() throws {
        let client = try HandlerStart(
            query: Self.base.merging(["ibi": "com.example.app", "clientId": "123-abc.apps.googleusercontent.com"]) { $1 }, apiKey: "k")
        #expect(client.flow.app == .apple(scheme: "com.googleusercontent.apps.123-abc", host: "firebaseauth"))
        #expect(client.providerId == "twitter.com" && client.flow.session == HandlerSession(sent: "abcdef", hashed: true))
        #expect(client.flow.authType == "signInWithRedirect")
        let app = try HandlerStart(query: Self.base.merging(["ibi": "com.example.app", "appId": "1:123:ios:abc"]) { $1 }, apiKey: "k")
        #expect(app.flow.app == .apple(scheme: "app-1-123-ios-abc", host: "firebaseauth"))
        let bundle = try HandlerStart(query: Self.base.merging(["ibi": "com.example.app"]) { $1 }, apiKey: "k")
        #expect(bundle.flow.app == .apple(scheme: "com.example.app", host: "google"))
        let android = try HandlerStart(query: Self.base.merging(["apn": "com.example.app"]) { $1 }, apiKey: "k")
        #expect(android.flow.app == .android(package: "com.example.app"))
        #expect(android.flow.session == HandlerSession(sent: "ABCDEF", hashed: false))  // Android presents it as sent
    }

    @Test func webSchemesBadKeysAndAppsWithNoCallbackAreRefused() {
        for extra in [["ibi": "javascript"], ["ibi": "https"], ["ibi": "bad scheme"], ["apn": "not-a-package"], [:]] {
            #expect(throws: HeraldError.self) { try HandlerStart(query: Self.base.merging(extra) { $1 }, apiKey: "k") }
        }
        #expect(throws: HeraldError.self) { try HandlerStart(query: Self.base.merging(["ibi": "com.example.app"]) { $1 }, apiKey: "other") }
        let forged = Self.base.merging(["ibi": "com.example.app", "providerId": "twitter.com\nforged log line"]) { $1 }
        #expect(throws: HeraldError.self) { try HandlerStart(query: forged, apiKey: "k") }
        let huge = Self.base.merging(["ibi": "a.b", "customParameters": #"{"a":""# + String(repeating: "x", count: 3000) + #""}"#]) { $1 }
        #expect(throws: HeraldError.self) { try HandlerStart(query: huge, apiKey: "k") }
    }

    @Test func reservedParametersNeverReachTheProvider() throws {
        let query = Self.base.merging(["ibi": "a.b", "customParameters": #"{"lang":"de","redirect_uri":"https://evil","state":"x"}"#]) { $1 }
        #expect(try HandlerStart(query: query, apiKey: "k").customParameters == ["lang": "de"])
        let broken = Self.base.merging(["ibi": "a.b", "customParameters": "[1]"]) { $1 }
        #expect(throws: HeraldError.self) { try HandlerStart(query: broken, apiKey: "k") }
    }

    @Test func theAppReceivesTheLinkOrTheErrorInsideDeepLinkID() throws {
        let app = AppReturn.apple(scheme: "com.example", host: "firebaseauth")
        let url = app.url(authType: "signInWithRedirect", eventId: "e 1", origin: "http://h:1", link: "http://h:1/x?a=1&b=2")
        let outer = try #require(URLComponents(string: url))
        #expect(outer.scheme == "com.example" && outer.host == "firebaseauth" && outer.path == "/link")
        let deepLink = try #require(outer.queryItems?.first { $0.name == "deep_link_id" }?.value)
        let inner = try #require(URLComponents(string: deepLink))
        let fields = Dictionary(uniqueKeysWithValues: (inner.queryItems ?? []).map { ($0.name, $0.value ?? "") })
        #expect(fields == ["authType": "signInWithRedirect", "eventId": "e 1", "link": "http://h:1/x?a=1&b=2"])
        let failed = app.url(authType: "t", eventId: "e", origin: "http://h", errorCode: "auth/internal-error", message: "m")
        let failedLink = try #require(URLComponents(string: failed)?.queryItems?.first { $0.name == "deep_link_id" }?.value)
        let failedInner = try #require(URLComponents(string: failedLink))
        let failure = Dictionary(uniqueKeysWithValues: (failedInner.queryItems ?? []).map { ($0.name, $0.value ?? "") })
        #expect(failedInner.path == "/__/auth/callback" && failure["authType"] == "t" && failure["eventId"] == "e")
        let error = try JSONSerialization.jsonObject(with: Data((failure["firebaseError"] ?? "").utf8)) as? [String: String]
        #expect(error == ["code": "auth/internal-error", "message": "m"])
    }

    @Test func sealedStateOpensOnlyForItsPurposeAndUntouched() throws {
        let seal = FlowSeal(serverKey: SymmetricKey(size: .bits256))
        let approved = ApprovedAssertion(
            providerId: "twitter.com", session: HandlerSession(sent: "h", hashed: true), accessToken: "T",
            tokenSecret: "SECRET-SENTINEL-42", expires: Date(timeIntervalSince1970: 2_000_000_000))
        let sealed = try seal.seal(approved, purpose: "a")
        // Encrypted, not merely encoded: the decoded bytes hold neither the secret nor the JSON.
        let bytes = try #require(Base64URL.decode(sealed))
        #expect(bytes.range(of: Data("SECRET-SENTINEL-42".utf8)) == nil && bytes.range(of: Data("tokenSecret".utf8)) == nil)
        let opened = try seal.open(sealed, as: ApprovedAssertion.self, purpose: "a")
        #expect(opened.tokenSecret == "SECRET-SENTINEL-42" && opened.accessToken == "T")
        #expect(throws: HeraldError.self) { try seal.open(sealed, as: ApprovedAssertion.self, purpose: "b") }
        var tampered = Array(sealed.utf8)
        tampered[tampered.count / 2] = tampered[tampered.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: HeraldError.self) { try seal.open(String(decoding: tampered, as: UTF8.self), as: ApprovedAssertion.self, purpose: "a") }
        let other = FlowSeal(serverKey: SymmetricKey(size: .bits256))
        #expect(throws: HeraldError.self) { try other.open(sealed, as: ApprovedAssertion.self, purpose: "a") }
    }

    @Test func theSessionIdMustBeTheOneTheHandlerSaw() {
        let hash = SHA256.hash(data: Data("raw-session".utf8)).map { String(format: "%02x", $0) }.joined()
        let apple = HandlerSession(sent: hash, hashed: true)
        #expect(apple.matches("raw-session"))
        #expect(!apple.matches(hash) && !apple.matches("other") && !apple.matches(nil) && !apple.matches(""))
        let android = HandlerSession(sent: "raw-session", hashed: false)
        #expect(android.matches("raw-session") && !android.matches(hash) && !android.matches(nil))
    }

    @Test func assertionsExpireAndOpenOnlyForTheirProviderAndSession() throws {
        let actions = try Rulebook().actions
        let now = Date()
        let approved = ApprovedAssertion(
            providerId: "twitter.com", session: HandlerSession(sent: "s-1", hashed: false), accessToken: "T", tokenSecret: "S",
            expires: now.addingTimeInterval(ProvidersService.assertionLifetime))
        let sealed = try actions.providers.handlerSeal.seal(approved, purpose: ProvidersService.assertionPurpose)
        let received = IdpAssertion(providerId: "twitter.com", sealed: sealed)
        let opened = try actions.providers.openHandlerAssertion(received, sessionId: "s-1", now: now)
        #expect(opened.accessToken == "T" && opened.oauthTokenSecret == "S" && opened.sealed == nil)
        let later = now.addingTimeInterval(ProvidersService.assertionLifetime + 1)
        #expect(throws: HeraldError.self) { try actions.providers.openHandlerAssertion(received, sessionId: "s-1", now: later) }
        #expect(throws: HeraldError.self) { try actions.providers.openHandlerAssertion(received, sessionId: "s-2", now: now) }
        let elsewhere = IdpAssertion(providerId: "oidc.acme", sealed: sealed)
        #expect(throws: HeraldError.self) { try actions.providers.openHandlerAssertion(elsewhere, sessionId: "s-1", now: now) }
    }

    @Test func aReturnWithAStaleOrForeignCookieIsRefused() async throws {
        let actions = try Rulebook { $0.providers.twitter = .init(consumerKey: "k", consumerSecret: "s") }.actions
        let now = Date()
        let flow = HandlerFlow(
            providerId: "twitter.com", authType: "signInWithRedirect", eventId: "e", session: HandlerSession(sent: "x", hashed: false),
            app: .android(package: "com.example.app"))
        var pending = PendingApproval(
            flow: flow, callback: "http://127.0.0.1/__/auth/handler", requestToken: "RT", requestSecret: "RS", expires: now.addingTimeInterval(-1))
        let expired = try actions.providers.handlerSeal.seal(pending, purpose: ProvidersService.pendingPurpose)
        pending.expires = now.addingTimeInterval(600)
        let fresh = try actions.providers.handlerSeal.seal(pending, purpose: ProvidersService.pendingPurpose)
        for (query, cookie) in [
            ("oauth_token=RT&oauth_verifier=V", expired), ("oauth_token=OTHER&oauth_verifier=V", fresh),
            ("oauth_token=RT&oauth_verifier=V", "forged"), ("oauth_token=RT&oauth_verifier=V", nil),
        ] {
            await #expect(throws: HeraldError.self) {
                try await actions.providers.signInHandler(query: query, cookie: cookie, handlerURL: "http://127.0.0.1/__/auth/handler", now: now)
            }
        }
    }
}
