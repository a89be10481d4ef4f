import HeraldCore
import Hummingbird

/// An error in Firebase's exact envelope:
/// `{"error":{"code":400,"message":"CODE : detail","errors":[{"message":…,"domain":"global","reason":"invalid"}]}}`.
struct FirebaseError: HTTPResponseError {
    let status: HTTPResponse.Status
    let message: String
    let reason: String
    /// The gRPC status name (`PERMISSION_DENIED`); Firebase omits it for its own error codes.
    let statusName: String?
    /// Why, for the log only (never sent): an unavailable ledger's own words.
    var detail: String?

    init(_ error: HeraldError) {
        if error.code == .unavailable {
            self = .unavailable
            detail = error.detail
        } else {
            self.init(status: .badRequest, message: error.description, reason: "invalid", statusName: nil)
        }
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
        message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid "
            + "authentication credential.",
        reason: "authError", statusName: "UNAUTHENTICATED")
    static let notFound = FirebaseError(status: .notFound, message: "NOT_FOUND", reason: "notFound", statusName: "NOT_FOUND")
    static let projectNotFound = FirebaseError(
        status: .notFound, message: "PROJECT_NOT_FOUND", reason: "notFound", statusName: "NOT_FOUND")
    static let internalError = FirebaseError(
        status: .internalServerError, message: "INTERNAL_ERROR", reason: "backendError", statusName: "INTERNAL")

    /// Too many wrong admin tokens from the client's network (`AdminTokenCheck`).
    static let tooManyAdminTokens = FirebaseError(
        status: .tooManyRequests, message: "TOO_MANY_ATTEMPTS_TRY_LATER : too many wrong admin tokens from this network",
        reason: "rateLimitExceeded", statusName: "RESOURCE_EXHAUSTED")

    /// The ledger cannot commit right now: nothing was stored, the client may retry (Firebase's 503).
    static let unavailable = FirebaseError(
        status: .serviceUnavailable, message: "UNAVAILABLE", reason: "backendError", statusName: "UNAVAILABLE")

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try FirebaseJSONEncoder.response(Envelope(self), status: status)
        if status == .serviceUnavailable { response.headers[.retryAfter] = "1" }
        return response
    }

    /// The JSON shape of the envelope.
    struct Envelope: Encodable {
        struct Body: Encodable {
            let code: Int
            let message: String
            let errors: [Detail]
            let status: String?
        }

        struct Detail: Encodable {
            let message: String
            let domain: String
            let reason: String
            let location: String?
            let locationType: String?
        }

        let error: Body

        init(_ error: FirebaseError) {
            let onHeader = error.reason == "authError"
            let detail = Detail(
                message: error.message, domain: "global", reason: error.reason, location: onHeader ? "Authorization" : nil,
                locationType: onHeader ? "header" : nil)
            let code = Int(error.status.code)
            self.error = Body(code: code, message: error.message, errors: [detail], status: error.statusName)
        }
    }
}
