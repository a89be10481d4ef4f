import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `POST /securetoken.googleapis.com/v1/token` (and `/v1/token`): the SDKs exchange a refresh token for a
/// fresh ID token, form-encoded (JS, Android) or as JSON (iOS).
struct SecureTokenController: Sendable {
    let configuration: HeraldConfiguration
    let sessions: SessionsService
    let adminToken: AdminTokenCheck

    static let paths: [RouterPath] = ["securetoken.googleapis.com/v1/token", "v1/token"]

    var routes: RouteCollection<HeraldRequestContext> {
        let routes = RouteCollection(context: HeraldRequestContext.self)
            .add(middleware: FirebaseErrorMiddleware())
            .add(middleware: BodyLimitMiddleware(maxBytes: configuration.server.maxBodyBytes))
            .add(middleware: ClientAddressMiddleware(trustedProxies: configuration.limits.trustedProxies))
            .add(
                middleware: CallerMiddleware(
                    apiKey: configuration.project.apiKey, admin: AdminCredential(configuration.server, check: adminToken)))
        for path in Self.paths { routes.post(path, use: token) }
        return routes
    }

    @Sendable func token(_ request: Request, context: HeraldRequestContext) async throws -> TokenReply {
        var request = request
        let body = try await request.collectBody(upTo: context.maxUploadSize)
        let grant = try GrantBody(Data(body.readableBytesView), contentType: request.headers[.contentType])
        let session = try await sessions.refresh(grantType: grant.grantType, refreshToken: grant.refreshToken)
        return TokenReply(session, projectID: configuration.project.id)
    }
}

/// The grant: `grant_type` and `refresh_token`, form-encoded or JSON (either spelling).
struct GrantBody: Sendable {
    var grantType: String?
    var refreshToken: String?

    /// - Throws: `INVALID_ARGUMENT` for a body that is neither a form (with well-formed escapes) nor a JSON object.
    init(_ data: Data, contentType: String?) throws {
        let isJSON = contentType?.lowercased().hasPrefix("application/json") ?? (data.first == UInt8(ascii: "{"))
        var fields: [String: String] = [:]
        if isJSON && !data.isEmpty {
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw HeraldError(.invalidArgument, "Invalid JSON payload received.")
            }
            for (name, value) in object { if let text = value as? String { fields[FieldName.camelCase(name)] = text } }
        } else {
            // Split by hand: `URLComponents.percentEncodedQuery`'s setter traps on a malformed escape such as `%zz`.
            for pair in String(decoding: data, as: UTF8.self).split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = Self.formDecoded(parts[0]), let value = Self.formDecoded(parts.count > 1 ? parts[1] : "") else {
                    throw HeraldError(.invalidArgument, "Invalid form payload received.")
                }
                fields[FieldName.camelCase(name)] = value
            }
        }
        grantType = fields["grantType"]
        refreshToken = fields["refreshToken"]
    }

    /// A form field's name or value: `+` is a space, then percent-decoded; nil for a malformed escape.
    private static func formDecoded(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

/// The token endpoint's answer, in its snake_case names.
struct TokenReply: ResponseEncodable {
    let accessToken: String
    let expiresIn: String
    let tokenType = "Bearer"
    let refreshToken: String
    let idToken: String
    let userID: String
    let projectID: String

    init(_ session: Session, projectID: String) {
        accessToken = session.idToken
        expiresIn = session.expiresIn
        refreshToken = session.refreshToken
        idToken = session.idToken
        userID = session.localId
        self.projectID = projectID
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case expiresIn = "expires_in"
        case tokenType = "token_type"
        case refreshToken = "refresh_token"
        case idToken = "id_token"
        case userID = "user_id"
        case projectID = "project_id"
    }
}
