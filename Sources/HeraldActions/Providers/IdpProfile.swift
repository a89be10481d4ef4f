import Foundation
import HeraldCore

/// What a sign-in answer tells the app about the provider's user besides the identity: Firebase's `rawUserInfo`
/// (the JSON apps read as `getAdditionalUserInfo(result).profile`) and, for Google, the given and family names.
public struct IdpProfile: Sendable, Hashable {
    /// JSON text.
    public var rawUserInfo: String
    public var firstName: String?
    public var lastName: String?

    public init(rawUserInfo: String, firstName: String? = nil, lastName: String? = nil) {
        self.rawUserInfo = rawUserInfo
        self.firstName = firstName
        self.lastName = lastName
    }

    /// From an ID token's claims (`json` is their text), as Firebase answers: for `google.com` the shape of Google's
    /// userinfo (`id`, `email`, `verified_email`, `name`, `given_name`, `family_name`, `picture`, `locale`,
    /// `granted_scopes`), for any other provider the claims themselves, every one the provider sent.
    ///
    /// - Parameter locale: the locale to report when the claims carry none (the emulator answers `en`).
    init(claims: ProviderClaims, json: Data, of identity: FederatedIdentity, locale: String? = nil) {
        guard identity.providerId == "google.com" else {
            self.init(rawUserInfo: String(decoding: json, as: UTF8.self))
            return
        }
        var scopes = ["openid", "https://www.googleapis.com/auth/userinfo.profile"]
        if identity.email != nil { scopes.append("https://www.googleapis.com/auth/userinfo.email") }
        let userInfo = GoogleUserInfo(
            grantedScopes: scopes.joined(separator: " "), id: identity.rawId, name: identity.displayName, givenName: claims.givenName,
            familyName: claims.familyName, verifiedEmail: identity.emailVerified, locale: claims.locale ?? locale,
            email: identity.email, picture: identity.photoURL)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = (try? encoder.encode(userInfo)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        self.init(rawUserInfo: text, firstName: claims.givenName, lastName: claims.familyName)
    }

    /// Google's userinfo answer, as Firebase passes it on.
    private struct GoogleUserInfo: Encodable {
        let grantedScopes: String
        let id: String
        let name: String?
        let givenName: String?
        let familyName: String?
        let verifiedEmail: Bool
        let locale: String?
        let email: String?
        let picture: String?

        enum CodingKeys: String, CodingKey {
            case grantedScopes = "granted_scopes", id, name, givenName = "given_name", familyName = "family_name"
            case verifiedEmail = "verified_email", locale, email, picture
        }
    }
}
