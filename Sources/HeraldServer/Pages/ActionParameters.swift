import HeraldCore

/// An action link's query, or the form its page posts back: `mode`, `oobCode`, `apiKey`, `continueUrl`,
/// `lang`, and on a post `csrfToken` and `newPassword`.
struct ActionParameters: Decodable, Sendable {
    var mode: String?
    var oobCode: String?
    var apiKey: String?
    var continueUrl: String?
    var lang: String?
    var csrfToken: String?
    var newPassword: String?
    /// `/__/auth/links`: the wrapped action link.
    var link: String?

    /// The action and code, when the link is complete and carries this project's API key.
    func action(apiKey expected: String) -> (kind: ActionKind, code: String)? {
        guard let mode, let kind = ActionKind(mode: mode), let oobCode, !oobCode.isEmpty, let apiKey,
            Secret.equal(apiKey, expected)
        else { return nil }
        return (kind, oobCode)
    }
}
