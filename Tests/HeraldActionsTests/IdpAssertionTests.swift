import Foundation
import HeraldCore
import Testing

@testable import HeraldActions

@Suite struct IdpAssertionTests {
    @Test func postBodyOverridesTheQueryAndTheFragmentOverridesBoth() throws {
        let assertion = try IdpAssertion(
            postBody: "providerId=google.com&id_token=from-body&access_token=from-body&nonce=n%201",
            requestUri: "http://localhost/cb?providerId=apple.com&id_token=from-query&access_token=from-query#access_token=from-fragment")
        #expect(assertion.providerId == "google.com")
        #expect(assertion.idToken == "from-body" && assertion.accessToken == "from-fragment" && assertion.nonce == "n 1")
    }

    @Test func twitterCredentialsAreRead() throws {
        let assertion = try IdpAssertion(postBody: "providerId=twitter.com&access_token=T-1&oauth_token_secret=S%2B2", requestUri: nil)
        #expect(assertion.accessToken == "T-1" && assertion.oauthTokenSecret == "S+2" && assertion.idToken == nil)
    }

    @Test func aMissingProviderOrTokenIsRefused() {
        #expect(throws: HeraldError(.invalidCredentialOrProviderID, "Invalid IdP response/credential: the assertion names no providerId")) {
            try IdpAssertion(postBody: "id_token=x", requestUri: "http://localhost")
        }
        #expect(throws: HeraldError.self) { try IdpAssertion(postBody: "providerId=google.com", requestUri: "http://localhost") }
    }

    @Test func aRelativeRequestURIIsRefused() {
        #expect(throws: HeraldError(.invalidRequestURI, "requestUri must be an absolute URI")) {
            try IdpAssertion(postBody: "providerId=google.com&id_token=x", requestUri: "notAnAbsoluteUriAndThusInvalid")
        }
        #expect(IdpAssertion.isAbsolute("http://localhost") && IdpAssertion.isAbsolute("com.example.app:/callback"))
        #expect(!IdpAssertion.isAbsolute("/callback?x=y:z") && !IdpAssertion.isAbsolute("1http://x"))
    }

    @Test func googleSignInsAnswerWithGooglesUserInfo() throws {
        let json = #"{"sub":"g-1","name":"Ada Lovelace","given_name":"Ada","family_name":"Lovelace"}"#
        let body = "providerId=google.com&id_token=" + json.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let (_, profile) = try IdpAssertion(postBody: body, requestUri: "http://localhost").emulatorIdentity()
        #expect(profile.firstName == "Ada" && profile.lastName == "Lovelace")
        let raw = try #require(try JSONSerialization.jsonObject(with: Data(profile.rawUserInfo.utf8)) as? [String: Any])
        #expect(raw["id"] as? String == "g-1" && raw["verified_email"] as? Bool == false && raw["locale"] as? String == "en")
        #expect(raw["granted_scopes"] as? String == "openid https://www.googleapis.com/auth/userinfo.profile")
        #expect(raw["email"] == nil && raw["given_name"] as? String == "Ada")
    }

    @Test func emulatorAssertionsAreReadAsTheEmulatorReadsThem() throws {
        let json = #"{"sub":"u-7","email":"Ada@Example.com","email_verified":"false","name":"Ada","screen_name":"ada"}"#
        let body = "providerId=twitter.com&id_token=" + json.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let (identity, profile) = try IdpAssertion(postBody: body, requestUri: "http://localhost").emulatorIdentity()
        #expect(identity.rawId == "u-7" && identity.email == "ada@example.com" && identity.providerId == "twitter.com")
        #expect(identity.emailVerified)  // JavaScript truthiness: the string "false" is true, as in the emulator
        #expect(identity.displayName == "Ada" && identity.screenName == "ada" && profile.rawUserInfo.contains("u-7"))
        let noSub = try IdpAssertion(postBody: "providerId=google.com&id_token=%7B%22email%22%3A%22a%40b.c%22%7D", requestUri: nil)
        #expect(throws: HeraldError.self) { try noSub.emulatorIdentity() }
    }
}
