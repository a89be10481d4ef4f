import Foundation

/// A refresh token as the ledger keeps it: its SHA-256, whose session it continues, and since when.
public struct RefreshTokenRecord: Sendable, Hashable {
    public let hash: [UInt8]
    public let uid: String
    /// The sign-in provider the session started with (`password`, …); refreshed ID tokens name it.
    public let provider: String
    /// The sign-in that created it: its ID tokens' `auth_time`, and what the account's `validSince` is compared with.
    public let issuedAt: Date
    /// Set once the token can never work again, with the error it answers (`USER_NOT_FOUND`).
    public let revoked: HeraldError.Code?

    public init(hash: [UInt8], uid: String, provider: String, issuedAt: Date, revoked: HeraldError.Code? = nil) {
        self.hash = hash
        self.uid = uid
        self.provider = provider
        self.issuedAt = issuedAt
        self.revoked = revoked
    }
}
