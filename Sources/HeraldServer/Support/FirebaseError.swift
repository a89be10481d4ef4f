import Foundation
import HeraldCore
import Hummingbird

/// An error in Firebase's exact envelope:
/// `{"error":{"code":400,"message":"CODE : detail","errors":[{"message":…,"domain":"global","reason":"invalid"}]}}`.
struct FirebaseError: Error {
    let status: HTTPResponse.Status
    let message: String
    let reason: String
    let statusName: String?

    init(_ error: HeraldError, status: HTTPResponse.Status = .badRequest) {
        self.status = status
        message = error.description
        reason = "invalid"
        statusName = nil
    }

    init(status: HTTPResponse.Status, message: String, reason: String, statusName: String?) {
        self.status = status
        self.message = message
        self.reason = reason
        self.statusName = statusName
    }

    static let missingAPIKey = FirebaseError(
        status: .forbidden, message: "The request is missing a valid API key.", reason: "forbidden", statusName: "PERMISSION_DENIED")
    static let invalidAPIKey = FirebaseError(
        status: .badRequest, message: "API key not valid. Please pass a valid API key.", reason: "keyInvalid",
        statusName: "INVALID_ARGUMENT")
    static let unauthenticated = FirebaseError(
        status: .unauthorized,
        message:
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
        reason: "authError", statusName: "UNAUTHENTICATED")
    static let notFound = FirebaseError(status: .notFound, message: "NOT_FOUND", reason: "notFound", statusName: "NOT_FOUND")

    var response: Response {
        var inner: [String: Any] = ["message": message, "domain": "global", "reason": reason]
        if reason == "authError" {
            inner["location"] = "Authorization"
            inner["locationType"] = "header"
        }
        var error: [String: Any] = ["code": Int(status.code), "message": message, "errors": [inner]]
        if let statusName { error["status"] = statusName }
        return JSONResponse.make(["error": error], status: status)
    }
}

/// JSON responses from plain dictionaries.
enum JSONResponse {
    static func make(_ object: [String: Any], status: HTTPResponse.Status = .ok) -> Response {
        make(data(object), status: status)
    }

    static func data(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }

    static func make(_ data: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
