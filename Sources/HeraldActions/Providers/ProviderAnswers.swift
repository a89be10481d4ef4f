import Foundation
import HeraldCore

/// A provider's JSON object (an ID token's claims, an endpoint's answer), read with `init?(json:)`.
protocol ProviderJSON: Decodable {}

extension ProviderJSON {
    /// The object in `json`, or nil when `json` is not a JSON object or not well-formed throughout. `JSONDecoder` reads
    /// only the members a type asks for, so the object is first read whole: a malformed member elsewhere (`01`, a bad
    /// escape, a lone surrogate) fails the object, as in `JSON.parse` and the `JSONSerialization` Herald used before.
    /// A member named twice is read the first time (`JSON.parse` and `JSONSerialization` keep the last).
    init?(json: Data) {
        let decoder = JSONDecoder()
        guard (try? decoder.decode([String: JSONValue].self, from: json)) != nil, let object = try? decoder.decode(Self.self, from: json)
        else { return nil }
        self = object
    }
}

/// The claims of a provider's ID token, or of the Firebase emulator's hand-made assertion, that Herald reads besides
/// what `OIDCTokenVerifier` checks. None is required, and a claim of another type than Herald reads counts as absent
/// (a numeric `name` is no name).
struct ProviderClaims: Sendable, Hashable {
    /// `sub`, when it is a string.
    var sub: String?
    /// Whether the claims have a `sub` at all, even `null` or a number (the emulator refuses the two differently).
    var hasSub = false
    var email: String?
    var emailVerified: EmailVerifiedClaim?
    var name: String?
    var givenName: String?
    var familyName: String?
    var picture: String?
    var locale: String?
    /// Twitter's handle, in the emulator's assertions.
    var screenName: String?
}

extension ProviderClaims: ProviderJSON {
    enum CodingKeys: String, CodingKey {
        case sub, email, name, picture, locale
        case emailVerified = "email_verified", givenName = "given_name", familyName = "family_name", screenName = "screen_name"
    }

    init(from decoder: any Decoder) throws {
        let claims = try decoder.container(keyedBy: CodingKeys.self)
        hasSub = claims.contains(.sub)
        sub = claims.string(.sub)
        email = claims.string(.email)
        emailVerified = try? claims.decodeIfPresent(EmailVerifiedClaim.self, forKey: .emailVerified)
        name = claims.string(.name)
        givenName = claims.string(.givenName)
        familyName = claims.string(.familyName)
        picture = claims.string(.picture)
        locale = claims.string(.locale)
        screenName = claims.string(.screenName)
    }
}

/// `email_verified` as a provider sent it: a boolean or a string (Apple sends `"true"`), or any JSON value in the
/// emulator's hand-made assertions. Never fails to decode.
struct EmailVerifiedClaim: Sendable, Hashable {
    /// What a provider means: `true`, or the string `"true"` in any case; anything else is false.
    var value: Bool
    /// JavaScript's `!!value`, as the Firebase emulator reads its assertions: the string `"false"` is true, and so are
    /// numbers other than 0, arrays and objects.
    var truthy: Bool
}

extension EmailVerifiedClaim: Codable {
    init(from decoder: any Decoder) throws {
        switch try? JSONValue(from: decoder) {
        case nil, .null: (value, truthy) = (false, false)
        case .bool(let flag): (value, truthy) = (flag, flag)
        case .string(let text): (value, truthy) = (text.lowercased() == "true", !text.isEmpty)
        case .integer(let number): (value, truthy) = (false, number != 0)
        case .number(let number): (value, truthy) = (false, number != 0 && !number.isNaN)
        case .array, .object: (value, truthy) = (false, true)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// An OIDC token endpoint's answer to the authorization code (OpenID Connect Core §3.1.3.3). A member that is not a
/// string counts as absent.
struct OIDCTokenAnswer: Sendable, Hashable {
    var idToken: String?
    var accessToken: String?

    /// The tokens in a token endpoint's answer (`body`, with HTTP `status`) to `providerId`'s authorization code.
    ///
    /// - Throws: `INVALID_IDP_RESPONSE` when the answer is not a JSON object with a non-empty string `id_token`.
    static func tokens(in body: Data, status: Int, of providerId: String) throws -> (idToken: String, accessToken: String?) {
        guard let answer = OIDCTokenAnswer(json: body), let idToken = answer.idToken, !idToken.isEmpty else {
            throw HeraldError(.invalidIDPResponse, "\(providerId)'s token endpoint refused the code (HTTP \(status))")
        }
        return (idToken, answer.accessToken)
    }
}

extension OIDCTokenAnswer: ProviderJSON {
    enum CodingKeys: String, CodingKey {
        case idToken = "id_token", accessToken = "access_token"
    }

    init(from decoder: any Decoder) throws {
        let answer = try decoder.container(keyedBy: CodingKeys.self)
        idToken = answer.string(.idToken)
        accessToken = answer.string(.accessToken)
    }
}

/// What Twitter's `account/verify_credentials` says of its user, whose id is the string `id_str` (Twitter's `id` is a
/// number too large for some JSON readers). A member that is not a string counts as absent.
struct TwitterUser: Sendable, Hashable {
    var id: String?
    var email: String?
    var name: String?
    var screenName: String?
    var profileImageURL: String?
}

extension TwitterUser: ProviderJSON {
    enum CodingKeys: String, CodingKey {
        case id = "id_str", email, name, screenName = "screen_name", profileImageURL = "profile_image_url_https"
    }

    init(from decoder: any Decoder) throws {
        let user = try decoder.container(keyedBy: CodingKeys.self)
        id = user.string(.id)
        email = user.string(.email)
        name = user.string(.name)
        screenName = user.string(.screenName)
        profileImageURL = user.string(.profileImageURL)
    }
}

extension KeyedDecodingContainer {
    /// The member `key` when it is a string; nil when it is absent, null or of another type.
    fileprivate func string(_ key: Key) -> String? {
        try? decodeIfPresent(String.self, forKey: key)
    }
}
