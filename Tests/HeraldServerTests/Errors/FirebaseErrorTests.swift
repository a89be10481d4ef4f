import Foundation
import HeraldCore
import Testing

@testable import HeraldServer

@Suite struct FirebaseErrorTests {
    func envelope(_ error: FirebaseError) throws -> String {
        String(decoding: try FirebaseJSONEncoder.json(FirebaseError.Envelope(error)), as: UTF8.self)
    }

    @Test func heraldErrorsAre400WithTheCodeAndDetail() throws {
        let error = FirebaseError(HeraldError(.weakPassword, "Password should be at least 6 characters"))
        #expect(error.status == .badRequest)
        let message = "WEAK_PASSWORD : Password should be at least 6 characters"
        #expect(
            try envelope(error)
                == #"{"error":{"code":400,"errors":[{"domain":"global","message":"\#(message)","reason":"invalid"}],"message":"\#(message)"}}"#)
    }

    @Test func aMissingAPIKeyIs403PermissionDenied() throws {
        #expect(FirebaseError.missingAPIKey.status == .forbidden)
        let message = "The request is missing a valid API key."
        #expect(
            try envelope(.missingAPIKey)
                == #"{"error":{"code":403,"errors":[{"domain":"global","message":"\#(message)","reason":"forbidden"}],"#
                + #""message":"\#(message)","status":"PERMISSION_DENIED"}}"#)
    }

    @Test func badCredentialsPointAtTheAuthorizationHeader() throws {
        let json = try envelope(.unauthenticated)
        #expect(FirebaseError.unauthenticated.status == .unauthorized)
        #expect(json.contains(#""location":"Authorization","locationType":"header""#))
        #expect(json.contains(#""status":"UNAUTHENTICATED""#))
    }

    @Test func internalErrorsRevealNothing() throws {
        #expect(FirebaseError.internalError.status == .internalServerError)
        #expect(
            try envelope(.internalError)
                == #"{"error":{"code":500,"errors":[{"domain":"global","message":"INTERNAL_ERROR","reason":"backendError"}],"#
                + #""message":"INTERNAL_ERROR","status":"INTERNAL"}}"#)
    }

    @Test func anotherProjectIsProjectNotFound() throws {
        #expect(FirebaseError.projectNotFound.status == .notFound)
        #expect(try envelope(.projectNotFound).contains(#""message":"PROJECT_NOT_FOUND","status":"NOT_FOUND""#))
    }
}
