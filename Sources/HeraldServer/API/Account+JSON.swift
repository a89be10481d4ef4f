import Foundation
import HeraldStore

extension Account {
    /// The `UserInfo` object of `accounts:lookup`.
    var userInfo: [String: Any] {
        var info: [String: Any] = [
            "localId": uid, "emailVerified": emailVerified, "disabled": disabled,
            "validSince": String(validSince / 1000), "createdAt": String(Int64(createdAt.timeIntervalSince1970 * 1000)),
            "emailLinkSignin": emailLinkSignin,
        ]
        if let email {
            info["email"] = email
            info["providerUserInfo"] = providers.map { ["providerId": $0, "email": email, "federatedId": email, "rawId": email] }
        } else {
            info["providerUserInfo"] = [[String: Any]]()
        }
        if let displayName { info["displayName"] = displayName }
        if let lastLoginAt { info["lastLoginAt"] = String(Int64(lastLoginAt.timeIntervalSince1970 * 1000)) }
        if passwordHash != nil { info["passwordHash"] = "UkVEQUNURUQ=" }  // "REDACTED", as production answers
        return info
    }
}
