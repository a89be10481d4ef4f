import Foundation
import HeraldCore
import JWTKit
import Testing

@testable import HeraldActions

/// What providers answer, read into typed values: ID token claims (verified, or the emulator's unsigned ones), an OIDC
/// token endpoint's answer, Twitter's `verify_credentials`.
@Suite struct ProviderAnswersTests {
    /// Claims signed exactly as written, so that a test chooses each one's JSON type.
    struct RawClaims: JWTPayload {
        var claims: [String: JSONValue]

        init(_ claims: [String: JSONValue]) { self.claims = claims }
        init(from decoder: any Decoder) throws { claims = try [String: JSONValue](from: decoder) }
        func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    func claims(_ json: String) -> ProviderClaims? { ProviderClaims(json: Data(json.utf8)) }

    /// The emulator's reading of an unsigned assertion for `providerId`.
    func emulator(_ json: String, providerId: String = "oidc.example") throws -> (identity: FederatedIdentity, profile: IdpProfile) {
        try IdpAssertion(providerId: providerId, idToken: json).emulatorIdentity()
    }

    /// `claims` (with a subject, issuer and expiry of their own unless given) signed by the OIDC tests' `provider`, and
    /// verified as `oidc.example`.
    func verified(_ claims: [String: JSONValue], by provider: OIDCTokenVerifierTests) async throws -> FederatedIdentity {
        let expiry = Int64(Date().timeIntervalSince1970) + 600
        let payload = RawClaims(
            ["sub": .string("user-1"), "iss": .string(provider.issuer), "exp": .integer(expiry)].merging(claims) { $1 })
        let token = try await provider.signer.sign(payload, kid: "k1")
        return try await provider.verifier.verify(token, keys: provider.keys, nonce: nil)
    }

    @Test func emailVerifiedIsABooleanOrAStringAndTheEmulatorReadsItAsJavaScriptDoes() throws {
        let readings: [(json: String, value: Bool, truthy: Bool)] = [
            ("true", true, true), ("false", false, false), (#""true""#, true, true), (#""TRUE""#, true, true), (#""false""#, false, true),
            (#""""#, false, false), ("1", false, true), ("0", false, false), ("0.5", false, true), ("[]", false, true), ("{}", false, true),
        ]
        for reading in readings {
            let read = claims(#"{"sub":"u-1","email_verified":\#(reading.json)}"#)?.emailVerified
            #expect(read == EmailVerifiedClaim(value: reading.value, truthy: reading.truthy), "email_verified: \(reading.json)")
            let identity = try emulator(#"{"sub":"u-1","email":"a@b.c","email_verified":\#(reading.json)}"#).identity
            #expect(identity.emailVerified == reading.truthy, "email_verified: \(reading.json)")
        }
        #expect(claims(#"{"email_verified":null}"#) == ProviderClaims())
        #expect(try !emulator(#"{"sub":"u-1","email_verified":null}"#).identity.emailVerified)
    }

    @Test func aVerifiedTokensEmailVerifiedIsTrueOrTheStringTrue() async throws {
        let readings: [(JSONValue?, Bool)] = [
            (.bool(true), true), (.bool(false), false), (.string("true"), true), (.string("TRUE"), true), (.string("false"), false),
            (.integer(1), false), (.null, false), (nil, false),
        ]
        let provider = try await OIDCTokenVerifierTests()
        for (sent, verified) in readings {
            var claims: [String: JSONValue] = ["aud": .string("client-123"), "email": .string("Ada@Example.com")]
            claims["email_verified"] = sent
            let identity = try await self.verified(claims, by: provider)
            #expect(identity.email == "ada@example.com" && identity.emailVerified == verified, "email_verified: \(String(describing: sent))")
        }
    }

    @Test func theAudienceIsAStringOrAnArray() async throws {
        let provider = try await OIDCTokenVerifierTests()
        for audience: JSONValue in [.string("client-123"), .array([.string("client-123")]), .array([.string("other"), .string("client-123")])] {
            #expect(try await verified(["aud": audience], by: provider).rawId == "user-1", "aud: \(audience)")
        }
        for audience: JSONValue in [.string("other"), .array([.string("other")]), .array([])] {
            await #expect(throws: HeraldError(.invalidIDPResponse, "the oidc.example ID token is for another client"), "aud: \(audience)") {
                try await verified(["aud": audience], by: provider)
            }
        }
    }

    @Test func claimsThatAreMissingOrNotStringsAreAbsent() async throws {
        #expect(claims(#"{"sub":"u-1"}"#) == ProviderClaims(sub: "u-1", hasSub: true))
        #expect(claims(#"{"sub":7,"email":null,"name":["Ada"],"given_name":{},"locale":1,"picture":true}"#) == ProviderClaims(hasSub: true))
        let all = try #require(
            claims(
                #"{"sub":"u-1","email":"a@b.c","email_verified":true,"name":"Ada L","given_name":"Ada","family_name":"L","picture":"https://p/x","#
                    + #""locale":"fr","screen_name":"ada","iss":"https://i","aud":["c"],"exp":1,"nonce":"n","hd":"b.c"}"#))
        #expect(
            all
                == ProviderClaims(
                    sub: "u-1", hasSub: true, email: "a@b.c", emailVerified: EmailVerifiedClaim(value: true, truthy: true), name: "Ada L",
                    givenName: "Ada", familyName: "L", picture: "https://p/x", locale: "fr", screenName: "ada"))

        #expect(
            try await verified(["aud": .string("client-123")], by: try await OIDCTokenVerifierTests())
                == FederatedIdentity(providerId: "oidc.example", rawId: "user-1", email: nil, emailVerified: false, displayName: nil))
        let bare = try emulator(#"{"sub":"u-1"}"#).identity
        #expect(bare == FederatedIdentity(providerId: "oidc.example", rawId: "u-1"))
    }

    @Test func theProfileKeepsEveryClaimOrIsGooglesUserInfo() throws {
        let json = #"{"sub":"u-1","hd":"example.com","groups":["a",{"b":1}],"amr":null,"n":12345678901234567890}"#
        #expect(try emulator(json).profile == IdpProfile(rawUserInfo: json))  // as sent, every claim and its spelling

        let identity = FederatedIdentity(providerId: "google.com", rawId: "g-1", email: "a@b.c", emailVerified: true)
        let named = try #require(claims(#"{"sub":"g-1","given_name":"Ada","family_name":"Lovelace","locale":"fr"}"#))
        let profile = IdpProfile(claims: named, json: Data(), of: identity)
        #expect(profile.firstName == "Ada" && profile.lastName == "Lovelace")
        let info = try JSONDecoder().decode([String: JSONValue].self, from: Data(profile.rawUserInfo.utf8))
        #expect(info["locale"] == .string("fr") && info["given_name"] == .string("Ada") && info["verified_email"] == .bool(true))
        let unnamed = IdpProfile(claims: ProviderClaims(sub: "g-1", hasSub: true), json: Data(), of: identity)
        let bare = try JSONDecoder().decode([String: JSONValue].self, from: Data(unnamed.rawUserInfo.utf8))
        #expect(unnamed.firstName == nil && unnamed.lastName == nil && bare["given_name"] == nil && bare["locale"] == nil)
    }

    @Test func malformedEmulatorAssertionsAreRefusedAsBefore() {
        let unparsable = HeraldError(.invalidIDPResponse, "Unable to parse id_token: it must be a JSON object or a JWT ((strict JSON.))")
        let noSub = HeraldError(.invalidIDPResponse, "Invalid Idp Response: id_token missing required fields. ((Missing \"sub\" field.))")
        let notString = HeraldError(.invalidIDPResponse, "((The \"sub\" field must be a string.))")
        let cases: [(String, HeraldError)] = [
            (#"{"sub":"u-1""#, unparsable), (#"["u-1"]"#, unparsable), (#"{"sub":"u-1","n":01}"#, unparsable),
            (#"{"sub":"u-1","s":"\x"}"#, unparsable), (#"{"sub":"u-1","s":"\ud800"}"#, unparsable), (#"{"sub":"u-1","n":1e400}"#, unparsable),
            ("not.a-jwt", unparsable), ("{}", noSub), (#"{"email":"a@b.c"}"#, noSub), (#"{"sub":null}"#, notString),
            (#"{"sub":7}"#, notString), (#"{"sub":""}"#, notString), (#"{"sub":["u-1"]}"#, notString),
        ]
        for (json, error) in cases {
            #expect(throws: error, "\(json)") { try emulator(json) }
        }
    }

    @Test func theEmulatorReadsAJWTsPayloadUnverified() throws {
        let payload = Base64URL.encode(Array(#"{"sub":"u-9","email":"Ada@Example.com","picture":"https://p/a.png"}"#.utf8))
        let identity = try emulator("e30.\(payload).", providerId: "Facebook.com").identity
        #expect(
            identity
                == FederatedIdentity(
                    providerId: "facebook.com", rawId: "u-9", email: "ada@example.com", emailVerified: false, photoURL: "https://p/a.png"))
    }

    @Test func theTokenEndpointsAnswerGivesTheTokens() throws {
        let full = #"{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"id_token":"h.p.s","scope":"openid"}"#
        let tokens = try OIDCTokenAnswer.tokens(in: Data(full.utf8), status: 200, of: "oidc.example")
        #expect(tokens.idToken == "h.p.s" && tokens.accessToken == "at-1")
        for json in [#"{"id_token":"h.p.s"}"#, #"{"id_token":"h.p.s","access_token":null}"#, #"{"id_token":"h.p.s","access_token":5}"#] {
            #expect(try OIDCTokenAnswer.tokens(in: Data(json.utf8), status: 200, of: "oidc.example") == ("h.p.s", nil), "\(json)")
        }
        #expect(OIDCTokenAnswer(json: Data(full.utf8)) == OIDCTokenAnswer(idToken: "h.p.s", accessToken: "at-1"))
    }

    @Test func aMalformedTokenAnswerIsRefusedAsBefore() {
        let refused = HeraldError(.invalidIDPResponse, "oidc.example's token endpoint refused the code (HTTP 200)")
        for json in [
            "", "access_token=at&id_token=h.p.s", #"[{"id_token":"h.p.s"}]"#, #"{"access_token":"at-1"}"#, #"{"id_token":""}"#,
            #"{"id_token":7}"#, #"{"id_token":null}"#, #"{"id_token":["h.p.s"]}"#, #"{"id_token":"h.p.s","expires_in":01}"#,
        ] {
            #expect(throws: refused, "\(json)") { try OIDCTokenAnswer.tokens(in: Data(json.utf8), status: 200, of: "oidc.example") }
        }
    }

    @Test func twittersUserIsReadFromIdStr() throws {
        let json =
            #"{"id":1234567890123456789,"id_str":"1234567890123456789","name":"Ada","screen_name":"ada","email":"Ada@Example.com","#
            + #""profile_image_url_https":"https://pbs.twimg.com/a.png","profile_image_url":"http://pbs.twimg.com/a.png","verified":false}"#
        #expect(
            try TwitterVerifier.identity(Data(json.utf8))
                == FederatedIdentity(
                    providerId: "twitter.com", rawId: "1234567890123456789", email: "ada@example.com", emailVerified: true, displayName: "Ada",
                    photoURL: "https://pbs.twimg.com/a.png", screenName: "ada"))
        // No address (not asked for, or none confirmed): nothing is vouched for.
        for bare in [#"{"id_str":"12"}"#, #"{"id_str":"12","email":""}"#, #"{"id_str":"12","email":null,"name":7}"#] {
            #expect(try TwitterVerifier.identity(Data(bare.utf8)) == FederatedIdentity(providerId: "twitter.com", rawId: "12"), "\(bare)")
        }
    }

    @Test func aMalformedTwitterAnswerIsRefusedAsBefore() {
        let refused = HeraldError(.invalidIDPResponse, "Twitter's answer names no user")
        for json in [
            "", "null", #"[{"id_str":"12"}]"#, #"{"id":12}"#, #"{"id_str":12}"#, #"{"id_str":""}"#, #"{"id_str":"12","name":"\u12"}"#,
        ] {
            #expect(throws: refused, "\(json)") { try TwitterVerifier.identity(Data(json.utf8)) }
        }
    }
}
