import Crypto
import Foundation
import HeraldCore

/// HMAC-SHA256 under the server's key (`server.tokenSecret`): binds an action page's form to its code (CSRF).
struct FormSigner: Sendable {
    let key: SymmetricKey

    /// A keyed MAC of `text`, base64url.
    func sign(_ text: String) -> String {
        Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
    }
}
