import HeraldActions
import Hummingbird

/// The answer of every sign-in (`signUp`, `signInWithPassword`, `signInWithEmailLink`): the session's
/// tokens under the method's `kind`.
struct SessionReply: ResponseEncodable {
    let kind: String
    let idToken: String
    let refreshToken: String
    /// Seconds, as text ("3600").
    let expiresIn: String
    let localId: String
    let email: String
    var registered: Bool?
    var isNewUser: Bool?
    var displayName: String?

    init(kind: String, _ session: Session, registered: Bool? = nil, isNewUser: Bool? = nil, displayName: String? = nil) {
        self.displayName = displayName
        self.kind = kind
        idToken = session.idToken
        refreshToken = session.refreshToken
        expiresIn = session.expiresIn
        localId = session.localId
        email = session.email
        self.registered = registered
        self.isNewUser = isNewUser
    }
}
