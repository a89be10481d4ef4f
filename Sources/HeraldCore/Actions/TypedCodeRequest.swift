/// What a `sendOobCode` request said about a typed code (Herald's `typedCode` and `typedCodeSessionId` fields), kept
/// with the queued mail's settings.
public struct TypedCodeRequest: Hashable, Sendable, Codable {
    /// Whether the mail carries a code to type.
    public var wanted: Bool
    /// SHA-256 (hex) of the session id the app sent with the request: only a redemption that presents the same id
    /// may type the code. The id itself is never stored.
    public var session: String?

    public init(wanted: Bool, session: String? = nil) {
        self.wanted = wanted
        self.session = session
    }

    /// Whether mail of `kind` queued with `request` carries a typed code under `policy`.
    public static func carries(_ kind: ActionKind, request: TypedCodeRequest?, policy: HeraldConfiguration.Policy.TypedCodes) -> Bool {
        guard policy != .off, kind.takesTypedCode else { return false }
        return request?.wanted ?? policy.covers(kind)
    }
}
