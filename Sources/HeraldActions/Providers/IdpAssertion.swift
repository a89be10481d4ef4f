import Foundation
import HeraldCore

/// What an app hands over from an identity provider in `accounts:signInWithIdp` (v3 `verifyAssertion`):
/// Firebase's `postBody` (form-encoded `providerId=…&id_token=…` or, for Twitter,
/// `providerId=twitter.com&access_token=…&oauth_token_secret=…`) and `requestUri`.
///
/// As Firebase's emulator reads them: the parameters of `requestUri`'s query, then `postBody`'s (which
/// override), then those of `requestUri`'s fragment (which override both).
public struct IdpAssertion: Sendable, Hashable {
    public var providerId: String
    public var idToken: String?
    public var accessToken: String?
    public var oauthTokenSecret: String?
    public var nonce: String?
    /// What Herald's hosted sign-in handler got from the provider, sealed into the link it handed the app
    /// (`heraldAssertion` in `requestUri`); opened only with the session id the app started the flow with.
    public var sealed: String?

    public init(
        providerId: String, idToken: String? = nil, accessToken: String? = nil, oauthTokenSecret: String? = nil, nonce: String? = nil,
        sealed: String? = nil
    ) {
        self.providerId = providerId
        self.idToken = idToken
        self.accessToken = accessToken
        self.oauthTokenSecret = oauthTokenSecret
        self.nonce = nonce
        self.sealed = sealed
    }

    /// - Throws: `INVALID_REQUEST_URI` when `requestUri` is not absolute, `INVALID_CREDENTIAL_OR_PROVIDER_ID` when
    ///   neither part names a provider or no token comes with it.
    public init(postBody: String?, requestUri: String?) throws {
        if let requestUri, !Self.isAbsolute(requestUri) {
            throw HeraldError(.invalidRequestURI, "requestUri must be an absolute URI")
        }
        var fields: [String: String] = [:]
        let (query, fragment) = Self.split(requestUri ?? "")
        for part in [query, postBody ?? "", fragment] {
            for (name, value) in Self.formFields(part) { fields[name] = value }
        }
        guard let providerId = fields["providerId"], !providerId.isEmpty else {
            throw HeraldError(.invalidCredentialOrProviderID, "Invalid IdP response/credential: the assertion names no providerId")
        }
        let idToken = fields["id_token"].flatMap { $0.isEmpty ? nil : $0 }
        let accessToken = fields["access_token"].flatMap { $0.isEmpty ? nil : $0 }
        let sealed = fields[Self.sealedField].flatMap { $0.isEmpty ? nil : $0 }
        guard idToken != nil || accessToken != nil || sealed != nil else {
            throw HeraldError(.invalidCredentialOrProviderID, "the assertion carries neither id_token nor access_token")
        }
        self.init(
            providerId: providerId, idToken: idToken, accessToken: accessToken,
            oauthTokenSecret: fields["oauth_token_secret"], nonce: fields["nonce"], sealed: sealed)
    }

    /// The `requestUri` parameter carrying a sealed handler assertion.
    static let sealedField = "heraldAssertion"

    /// Whether `uri` starts with a scheme (RFC 3986: a letter, then letters, digits, `+`, `-` or `.`, then `:`).
    static func isAbsolute(_ uri: String) -> Bool {
        guard let colon = uri.firstIndex(of: ":"), let first = uri.first, first.isASCII, first.isLetter else { return false }
        return uri[..<colon].allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// The query and the fragment of a URI (either may be empty).
    static func split(_ uri: String) -> (query: String, fragment: String) {
        let (beforeFragment, fragment) = uri.firstIndex(of: "#").map { (uri[..<$0], uri[uri.index(after: $0)...]) } ?? (uri[...], "")
        let query = beforeFragment.firstIndex(of: "?").map { beforeFragment[beforeFragment.index(after: $0)...] } ?? ""
        return (String(query), String(fragment))
    }

    /// `a=1&b=2` by the form rules (`+` is a space, then percent-decoding), in order.
    static func formFields(_ text: String) -> [(String, String)] {
        text.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), !name.isEmpty else { return nil }
            return (name, parts.count > 1 ? decode(parts[1]) ?? "" : "")
        }
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

extension IdpAssertion {
    /// Emulator mode: the Firebase emulator's fake assertion, an unsigned JSON object (or a JWT whose payload
    /// is read unverified) in `id_token` (or `access_token`), with a string `sub`. As the emulator reads it:
    /// `email` lower-cased, `email_verified` as JavaScript truthiness, `name`, `picture`, `screen_name`.
    ///
    /// - Throws: `INVALID_IDP_RESPONSE` with the emulator's detail when the claims cannot be read or lack `sub`.
    public func emulatorIdentity() throws -> (identity: FederatedIdentity, profile: IdpProfile) {
        guard let text = idToken ?? accessToken, let data = Self.claimsJSON(text), let claims = ProviderClaims(json: data) else {
            throw HeraldError(.invalidIDPResponse, "Unable to parse id_token: it must be a JSON object or a JWT ((strict JSON.))")
        }
        guard claims.hasSub else {
            throw HeraldError(.invalidIDPResponse, "Invalid Idp Response: id_token missing required fields. ((Missing \"sub\" field.))")
        }
        guard let rawId = claims.sub, !rawId.isEmpty else {
            throw HeraldError(.invalidIDPResponse, "((The \"sub\" field must be a string.))")
        }
        let identity = FederatedIdentity(
            providerId: providerId.lowercased(), rawId: rawId, email: claims.email?.lowercased(),
            emailVerified: claims.emailVerified?.truthy ?? false, displayName: claims.name, photoURL: claims.picture,
            screenName: claims.screenName)
        return (identity, IdpProfile(claims: claims, json: data, of: identity, locale: "en"))
    }

    /// The JSON of the claims: the text itself, or a JWT's payload.
    static func claimsJSON(_ text: String) -> Data? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("{") { return Data(trimmed.utf8) }
        let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        return Base64URL.decode(parts[1])
    }
}
