import Foundation

/// Firebase's custom claims (`customAttributes`): a JSON object an administrator sets on an account (firebase-admin's
/// `set_custom_user_claims`, an import's users), which every ID token of the account carries at its top level.
///
/// ```swift
/// account.customAttributes = try CustomClaims.validate(#"{"role":"admin"}"#)
/// ```
public enum CustomClaims {
    /// The longest claims text Firebase accepts, in UTF-16 code units.
    public static let maximumLength = 1000

    /// The claims an ID token reserves for itself, which custom claims may not set.
    public static let reserved: Set<String> = [
        "iss", "aud", "sub", "iat", "exp", "nbf", "jti", "nonce", "azp", "acr", "amr", "cnf", "auth_time", "firebase",
        "at_hash", "c_hash",
    ]

    /// The claims as the account keeps them: nil for none (`{}` or empty text).
    ///
    /// - Throws: `CLAIMS_TOO_LARGE` over 1,000 characters, `INVALID_CLAIMS` for anything but a JSON object,
    ///   `FORBIDDEN_CLAIM : <name>` for a reserved claim.
    public static func validate(_ text: String) throws -> String? {
        // Counted as Firebase (JavaScript) counts a string's length: in UTF-16 code units.
        guard text.utf16.count <= maximumLength else { throw HeraldError(.claimsTooLarge, "") }
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return nil }
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8)) else {
            throw HeraldError(.invalidClaims, "")
        }
        if let claim = object.keys.sorted().first(where: reserved.contains) { throw HeraldError(.forbiddenClaim, claim) }
        return object.isEmpty ? nil : text
    }

    /// The claims of kept text, for an ID token; empty when there are none (or the text no longer reads).
    public static func decode(_ text: String?) -> [String: JSONValue] {
        guard let text else { return [:] }
        return (try? JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8))) ?? [:]
    }
}
