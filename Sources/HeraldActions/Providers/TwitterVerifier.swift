import Foundation
import HeraldCore
import HeraldMail

/// Checks a Twitter access token and secret (OAuth 1.0a) by calling `account/verify_credentials` signed with
/// the app's consumer key and secret, and reads the user from the answer.
struct TwitterVerifier: Sendable {
    let settings: HeraldConfiguration.Providers.Twitter
    var client = CurlHTTPClient(timeout: 10)

    /// - Throws: `INVALID_IDP_RESPONSE` when Twitter refuses the credentials or answers something else;
    ///   `UNAVAILABLE` when Twitter cannot be reached.
    func verify(token: String, secret: String) throws -> (identity: FederatedIdentity, rawUserInfo: String) {
        let base = settings.apiBaseURL.hasSuffix("/") ? String(settings.apiBaseURL.dropLast()) : settings.apiBaseURL
        let url = base + "/1.1/account/verify_credentials.json"
        let query = [("include_email", "true"), ("skip_status", "true")]
        let signer = OAuth1Signer(consumerKey: settings.consumerKey, consumerSecret: settings.consumerSecret)
        let nonce = String(ActionCode.generate().plaintext.prefix(32))
        let header = signer.authorizationHeader(
            method: "GET", url: url, queryItems: query, token: token, tokenSecret: secret, nonce: nonce,
            timestamp: Int(Date().timeIntervalSince1970))
        let answer = try client.get(url + "?include_email=true&skip_status=true", headers: ["Authorization: \(header)"])
        guard answer.status == 200 else {
            throw HeraldError(.invalidIDPResponse, "Twitter refused the credentials (HTTP \(answer.status))")
        }
        guard let user = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any],
            let id = user["id_str"] as? String, !id.isEmpty
        else {
            throw HeraldError(.invalidIDPResponse, "Twitter's answer names no user")
        }
        let email = (user["email"] as? String).flatMap { $0.isEmpty ? nil : $0.lowercased() }
        // Twitter only returns addresses its users have confirmed.
        let identity = FederatedIdentity(
            providerId: "twitter.com", rawId: id, email: email, emailVerified: email != nil, displayName: user["name"] as? String,
            photoURL: user["profile_image_url_https"] as? String, screenName: user["screen_name"] as? String)
        return (identity, String(decoding: answer.body, as: UTF8.self))
    }
}
