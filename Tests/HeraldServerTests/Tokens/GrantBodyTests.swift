import Foundation
import HeraldCore
import Testing

@testable import HeraldServer

@Suite struct GrantBodyTests {
    func grant(_ form: String) throws -> GrantBody {
        try GrantBody(Data(form.utf8), contentType: "application/x-www-form-urlencoded")
    }

    @Test func aFormIsDecodedInEitherSpellingWithPlusAsSpace() throws {
        let body = try grant("grant_type=refresh_token&refreshToken=a%2Bb+c")
        #expect(body.grantType == "refresh_token")
        #expect(body.refreshToken == "a+b c")
    }

    @Test func aMalformedEscapeIsAnInvalidArgumentNotACrash() {
        for form in ["grant_type=%zz", "refresh_token=%", "%zz=refresh_token", "grant_type=%C3"] {
            let error = #expect(throws: HeraldError.self) { try grant(form) }
            #expect(error?.code == .invalidArgument)
        }
    }
}
