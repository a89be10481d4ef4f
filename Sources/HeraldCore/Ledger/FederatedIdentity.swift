/// A user as an identity provider knows them: what a verified assertion (an OIDC ID token, Twitter's
/// `verify_credentials`, an emulator assertion) says, and what an account keeps of each linked provider
/// (Firebase's `providerUserInfo`).
public struct FederatedIdentity: Sendable, Hashable, Codable {
    /// `google.com`, `apple.com`, `twitter.com`, `oidc.<name>`.
    public var providerId: String
    /// The provider's own id of the user (`sub`, Twitter's `id_str`); Firebase's `rawId` and `federatedId`.
    public var rawId: String
    public var email: String?
    /// Whether the provider vouches for `email`.
    public var emailVerified: Bool
    public var displayName: String?
    public var photoURL: String?
    /// Twitter's handle.
    public var screenName: String?

    public init(
        providerId: String, rawId: String, email: String? = nil, emailVerified: Bool = false, displayName: String? = nil,
        photoURL: String? = nil, screenName: String? = nil
    ) {
        self.providerId = providerId
        self.rawId = rawId
        self.email = email
        self.emailVerified = emailVerified
        self.displayName = displayName
        self.photoURL = photoURL
        self.screenName = screenName
    }
}
