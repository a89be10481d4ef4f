import Foundation
import HeraldActions
import HeraldCore
import Testing

@testable import HeraldServer

@Suite struct MessageTests {
    func json(_ value: some Encodable) throws -> String {
        String(decoding: try FirebaseJSONEncoder.json(value), as: UTF8.self)
    }

    @Test func userInfoWritesTimesAsStringsAndRedactsThePassword() throws {
        let account = Account(
            uid: "u1", email: "ada@example.com", emailVerified: true, passwordHash: "pbkdf2-sha256$1$s$h", displayName: "Ada",
            validSince: 1_700_000_000_500, createdAt: Date(timeIntervalSince1970: 1_600_000_000.25), providers: ["password"])
        #expect(
            try json(UserInfo(account))
                == #"{"createdAt":"1600000000250","disabled":false,"displayName":"Ada","email":"ada@example.com","#
                + #""emailLinkSignin":false,"emailVerified":true,"localId":"u1","passwordHash":"UkVEQUNURUQ=","#
                + #""providerUserInfo":[{"email":"ada@example.com","federatedId":"ada@example.com","providerId":"password","#
                + #""rawId":"ada@example.com"}],"validSince":"1700000000"}"#)
    }

    @Test func anAccountWithoutEmailHasNoProviders() throws {
        let account = Account(uid: "u2", email: nil, validSince: 0, createdAt: Date(timeIntervalSince1970: 0), providers: ["password"])
        let text = try json(UserInfo(account))
        #expect(text.contains(#""providerUserInfo":[]"#))
        #expect(!text.contains("passwordHash") && !text.contains("lastLoginAt") && !text.contains(#""email""#))
    }

    @Test func sendOobCodeNeedsAKnownRequestType() throws {
        let missing = #expect(throws: HeraldError.self) { try SendOobCodeBody.decode(#"{"email":"a@x.test"}"#).sendRequest(locale: nil) }
        #expect(missing?.code == .missingRequestType)
        let unknown = #expect(throws: HeraldError.self) { try SendOobCodeBody.decode(#"{"requestType":"NOPE"}"#).sendRequest(locale: nil) }
        #expect(unknown?.code == .invalidRequestType)
    }

    @Test func sendOobCodeAcceptsBothSDKsSpellingsOfTheAppSettings() throws {
        let body = try SendOobCodeBody.decode(
            #"{"requestType":"EMAIL_SIGNIN","iosBundleId":"com.example.ios","androidMinimumVersionCode":"12","canHandleCodeInApp":true}"#)
        let request = try body.sendRequest(locale: "pl")
        #expect(request.kind == .signIn && request.locale == "pl" && !request.returnLink)
        #expect(request.settings.iOSBundleId == "com.example.ios")
        #expect(request.settings.androidMinimumVersion == "12")
        #expect(request.settings.handleCodeInApp)
    }

    @Test func repliesLeaveOutWhatIsNotThere() throws {
        #expect(try json(OobCodeReply(email: "a@x.test")) == #"{"email":"a@x.test","kind":"identitytoolkit#GetOobConfirmationCodeResponse"}"#)
        #expect(
            try json(ResetPasswordReply(requestType: "EMAIL_SIGNIN"))
                == #"{"kind":"identitytoolkit#ResetPasswordResponse","requestType":"EMAIL_SIGNIN"}"#)
        #expect(try json(LookupReply(users: nil)) == #"{"kind":"identitytoolkit#GetAccountInfoResponse"}"#)
    }

    @Test func linksAreWrittenWithUnescapedSlashes() throws {
        let reply = OobCodeReply(email: "a@x.test", oobCode: "c", oobLink: "https://h.example/__/auth/action?oobCode=c")
        #expect(try json(reply).contains(#""oobLink":"https://h.example/__/auth/action?oobCode=c""#))
    }
}

extension StrictDecodable {
    static func decode(_ json: String) throws -> Self {
        try StrictJSONDecoder().decode(Self.self, from: Data(json.utf8))
    }
}
