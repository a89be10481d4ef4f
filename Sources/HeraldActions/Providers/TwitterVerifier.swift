import Foundation
import HeraldCore
import HeraldHTTPClient

/// Twitter's side of OAuth 1.0a under the app's consumer key and secret: checking an access token and secret
/// with `account/verify_credentials`, and the three-legged exchange of the hosted sign-in handler
/// (`oauth/request_token`, the user's approval at `oauth/authenticate`, `oauth/access_token`).
struct TwitterVerifier: Sendable {
    let settings: HeraldConfiguration.Providers.Twitter
    var client = CurlHTTPClient(timeout: 10)

    private var base: String {
        settings.apiBaseURL.hasSuffix("/") ? String(settings.apiBaseURL.dropLast()) : settings.apiBaseURL
    }

    /// Step one: a request token whose approval returns the browser to `callback`.
    ///
    /// - Throws: `INVALID_IDP_RESPONSE` when Twitter refuses (a wrong consumer key or secret, a callback URL
    ///   the app has not registered); `UNAVAILABLE` when Twitter cannot be reached.
    func requestToken(callback: String) throws -> (token: String, secret: String) {
        let fields = try exchange(
            base + "/oauth/request_token", token: nil, tokenSecret: "", protocolItems: [("oauth_callback", callback)])
        guard fields["oauth_callback_confirmed"] == "true" else {
            throw HeraldError(.invalidIDPResponse, "Twitter did not confirm the callback URL")
        }
        return (fields["oauth_token"]!, fields["oauth_token_secret"]!)
    }

    /// Where the browser approves `requestToken`, with the app's extra parameters (`lang`, `force_login`, …).
    func authorizationURL(requestToken: String, parameters: [(String, String)]) -> String {
        base + "/oauth/authenticate?" + PercentEncoding.query([("oauth_token", requestToken)] + parameters)
    }

    /// Step three: the user's access token and secret for an approved request token.
    ///
    /// - Throws: `INVALID_IDP_RESPONSE` when Twitter refuses the verifier or the token.
    func accessToken(requestToken: String, secret: String, verifier: String) throws -> (token: String, secret: String) {
        let fields = try exchange(
            base + "/oauth/access_token", token: requestToken, tokenSecret: secret, protocolItems: [("oauth_verifier", verifier)])
        return (fields["oauth_token"]!, fields["oauth_token_secret"]!)
    }

    /// A signed POST answered with `oauth_token` and `oauth_token_secret` (form-encoded).
    private func exchange(_ url: String, token: String?, tokenSecret: String, protocolItems: [(String, String)]) throws -> [String: String] {
        let endpoint = url.split(separator: "/").last ?? ""
        let header = authorization("POST", url, query: [], token: token, secret: tokenSecret, protocolItems: protocolItems)
        let answer = try client.post(url, form: "", headers: ["Authorization: \(header)"])
        try answer.requireOK(unavailable: "Twitter could not answer \(endpoint)", refused: "Twitter refused \(endpoint)")
        let fields = Dictionary(IdpAssertion.formFields(String(decoding: answer.body, as: UTF8.self)), uniquingKeysWith: { $1 })
        guard fields["oauth_token"]?.isEmpty == false, fields["oauth_token_secret"]?.isEmpty == false else {
            throw HeraldError(.invalidIDPResponse, "Twitter's answer to \(endpoint) carries no token")
        }
        return fields
    }

    /// The OAuth 1.0a `Authorization` header of one request, signed with the consumer's and the token's secrets.
    private func authorization(
        _ method: String, _ url: String, query: [(String, String)], token: String?, secret: String, protocolItems: [(String, String)] = []
    ) -> String {
        OAuth1Signer(consumerKey: settings.consumerKey, consumerSecret: settings.consumerSecret).authorizationHeader(
            method: method, url: url, queryItems: query, token: token, tokenSecret: secret, protocolItems: protocolItems,
            nonce: RandomToken.hex(bytes: 16), timestamp: Int(Date().timeIntervalSince1970))
    }

    /// - Throws: `INVALID_IDP_RESPONSE` when Twitter refuses the credentials or answers something else;
    ///   `UNAVAILABLE` when Twitter cannot be reached.
    func verify(token: String, secret: String) throws -> (identity: FederatedIdentity, rawUserInfo: String) {
        let url = base + "/1.1/account/verify_credentials.json"
        let query = [("include_email", "true"), ("skip_status", "true")]
        let header = authorization("GET", url, query: query, token: token, secret: secret)
        let answer = try client.get(url + "?" + PercentEncoding.query(query), headers: ["Authorization: \(header)"])
        try answer.requireOK(unavailable: "Twitter could not check the credentials", refused: "Twitter refused the credentials")
        return (try Self.identity(answer.body), String(decoding: answer.body, as: UTF8.self))
    }

    /// The user in `verify_credentials`'s answer.
    ///
    /// - Throws: `INVALID_IDP_RESPONSE` when the answer is not a JSON object with a non-empty string `id_str`.
    static func identity(_ answer: Data) throws -> FederatedIdentity {
        guard let user = TwitterUser(json: answer), let id = user.id, !id.isEmpty else {
            throw HeraldError(.invalidIDPResponse, "Twitter's answer names no user")
        }
        let email = user.email.flatMap { $0.isEmpty ? nil : $0.lowercased() }
        // Twitter only returns addresses its users have confirmed.
        return FederatedIdentity(
            providerId: "twitter.com", rawId: id, email: email, emailVerified: email != nil, displayName: user.name,
            photoURL: user.profileImageURL, screenName: user.screenName)
    }
}

extension CurlHTTPClient.Answer {
    /// A provider's answer must be a 200: a 5xx or 429 is `UNAVAILABLE` (it may answer later), anything else
    /// `INVALID_IDP_RESPONSE`; each message ends with the HTTP status.
    func requireOK(unavailable: String, refused: String) throws {
        if status >= 500 || status == 429 { throw HeraldError(.unavailable, "\(unavailable) (HTTP \(status))") }
        guard status == 200 else { throw HeraldError(.invalidIDPResponse, "\(refused) (HTTP \(status))") }
    }
}
