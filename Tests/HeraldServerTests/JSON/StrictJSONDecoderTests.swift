import Foundation
import HeraldCore
import Testing

@testable import HeraldServer

@Suite struct StrictJSONDecoderTests {
    let decoder = StrictJSONDecoder()

    func decode<T: StrictDecodable>(_ type: T.Type, _ json: String) throws -> T {
        try decoder.decode(type, from: Data(json.utf8))
    }

    func message<T: StrictDecodable>(_ type: T.Type, _ json: String) -> String? {
        let error = #expect(throws: HeraldError.self) { try decode(type, json) }
        #expect(error?.code == .invalidArgument)
        return error?.description
    }

    @Test func snakeCaseNamesAreTheirCamelCaseFieldsAndNullIsAbsent() throws {
        let body = try decode(SendOobCodeBody.self, #"{"request_type":"VERIFY_EMAIL","return_oob_link":true,"email":null}"#)
        #expect(body.requestType?.name(ActionKind.requestType(number:)) == "VERIFY_EMAIL")
        #expect(body.returnOobLink == true)
        #expect(body.email == nil)
    }

    @Test func enumsMayBeTheirProtobufNumbers() throws {
        let body = try decode(SendOobCodeBody.self, #"{"requestType":6,"email":"ada@example.com"}"#)
        #expect(try body.sendRequest(locale: nil).kind == .signIn)
        let unspecified = try decode(SendOobCodeBody.self, #"{"requestType":0}"#)
        #expect(throws: HeraldError(.missingRequestType, "")) { try unspecified.sendRequest(locale: nil) }
        let update = try decode(UpdateBody.self, #"{"deleteAttribute":[2,"PHOTO_URL"]}"#)
        #expect(update.deletedAttributes == ["DISPLAY_NAME", "PHOTO_URL"])
    }

    @Test func anEmptyBodyIsAnEmptyObject() throws {
        let body = try decode(ResetPasswordBody.self, "")
        #expect(body.oobCode == nil && body.newPassword == nil)
    }

    @Test func unknownFieldsAreRefusedByTheirSentName() {
        #expect(
            message(SignUpBody.self, #"{"email":"a@x.test","favourite_colour":"blue"}"#)
                == #"INVALID_ARGUMENT : Invalid JSON payload received. Unknown name "favourite_colour": Cannot find field."#)
    }

    @Test func ignoredFieldsAreAcceptedWhateverTheirType() throws {
        let body = try decode(SignInWithPasswordBody.self, #"{"email":"a@x.test","returnSecureToken":{"any":[1,true]}}"#)
        #expect(body.email == "a@x.test")
    }

    @Test func wrongTypesNameTheFieldAndTheExpectedType() {
        #expect(message(SignUpBody.self, #"{"password":123456}"#) == "INVALID_ARGUMENT : Invalid value at 'password' (TYPE_STRING)")
        #expect(message(SignInWithPasswordBody.self, #"{"email":["a@x.test"]}"#) == "INVALID_ARGUMENT : Invalid value at 'email' (TYPE_STRING)")
        #expect(
            message(SendOobCodeBody.self, #"{"can_handle_code_in_app":"yes"}"#)
                == "INVALID_ARGUMENT : Invalid value at 'canHandleCodeInApp' (TYPE_BOOL)")
        #expect(message(LookupBody.self, #"{"localId":[1]}"#) == "INVALID_ARGUMENT : Invalid value at 'localId' (TYPE_STRING)")
    }

    @Test func malformedJSONAndNonObjectsAreInvalidPayloads() {
        let malformed = "INVALID_ARGUMENT : Invalid JSON payload received."
        let notAnObject = "INVALID_ARGUMENT : Invalid JSON payload received. Expected an object."
        #expect(message(SendOobCodeBody.self, "{not json") == malformed)
        #expect(message(SendOobCodeBody.self, String(repeating: "[", count: 5000)) == malformed)
        for json in ["[]", #""PASSWORD_RESET""#, "null", "42"] {
            #expect(message(SendOobCodeBody.self, json) == notAnObject, "\(json)")
        }
    }

    @Test func flatAndNestedBodiesGetTheSameChecksAndValues() throws {
        // A body without a nested object is read in one parse; one with a nested object, or a snake_case name, in
        // two. The answers must not depend on which.
        let flat = #"{"requestType":"EMAIL_SIGNIN","email":"ada@example.com","canHandleCodeInApp":true}"#
        let nested = #"{"requestType":"EMAIL_SIGNIN","email":"ada@example.com","canHandleCodeInApp":true,"clientType":{"a":1}}"#
        let snake = #"{"request_type":"EMAIL_SIGNIN","email":"ada@example.com","can_handle_code_in_app":true}"#
        for json in [flat, nested, snake] {
            let body = try decode(SendOobCodeBody.self, json)
            #expect(body.email == "ada@example.com" && body.canHandleCodeInApp == true, "\(json)")
            #expect(try body.sendRequest(locale: nil).kind == .signIn, "\(json)")
        }
        #expect(
            message(SignUpBody.self, #"{"email":"a@x.test","favouriteColour":{"shade":"blue"}}"#)
                == #"INVALID_ARGUMENT : Invalid JSON payload received. Unknown name "favouriteColour": Cannot find field."#)
        #expect(
            message(SignUpBody.self, #"{"email":"a@x.test","favouriteColour":"blue"}"#)
                == #"INVALID_ARGUMENT : Invalid JSON payload received. Unknown name "favouriteColour": Cannot find field."#)
        for json in [#"{"email":"a@x.test","targetProjectId":"p"}"#, #"{"email":"a@x.test","targetProjectId":{"p":1}}"#] {
            let error = #expect(throws: HeraldError.self) { try decoder.decode(SignUpBody.self, from: Data(json.utf8), caller: .app) }
            #expect(error?.code == .insufficientPermission, "\(json)")
        }
        #expect(message(SendOobCodeBody.self, #"{"email":"a@x.test","#) == "INVALID_ARGUMENT : Invalid JSON payload received.")
        #expect(message(SendOobCodeBody.self, #"{"email":{"x":1}}"#) == "INVALID_ARGUMENT : Invalid value at 'email' (TYPE_STRING)")
        #expect(message(SendOobCodeBody.self, #"{"email":7}"#) == "INVALID_ARGUMENT : Invalid value at 'email' (TYPE_STRING)")
    }

    @Test func listFieldsTakeOneStringOrAnArray() throws {
        #expect(try decode(LookupBody.self, #"{"localId":"u1"}"#).localId?.values == ["u1"])
        #expect(try decode(LookupBody.self, #"{"email":["a@x.test","b@x.test"]}"#).email?.values == ["a@x.test", "b@x.test"])
        #expect(try decode(UpdateBody.self, #"{"deleteAttribute":"DISPLAY_NAME"}"#).edit.deleteDisplayName)
    }

    @Test func validSinceTakesUnixSecondsAsTextOrNumber() throws {
        #expect(try decode(UpdateBody.self, #"{"validSince":"1700000000"}"#).edit.validSince == "1700000000")
        #expect(try decode(UpdateBody.self, #"{"valid_since":1700000000}"#).edit.validSince == "1700000000")
        #expect(message(UpdateBody.self, #"{"validSince":true}"#) == "INVALID_ARGUMENT : Invalid value at 'validSince' (TYPE_STRING)")
    }

    @Test func camelCaseConversionKeepsTheRestOfEachWord() {
        #expect(FieldName.camelCase("request_type") == "requestType")
        #expect(FieldName.camelCase("ios_bundle_id") == "iosBundleId")
        #expect(FieldName.camelCase("iOSBundleId") == "iOSBundleId")
    }
}
