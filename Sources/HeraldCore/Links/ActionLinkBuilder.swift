/// Builds action links in Firebase's production shapes.
///
/// Web link: `{actionUrl}?apiKey=…&mode=…&oobCode=…&continueUrl=…&lang=…`.
/// With `handleCodeInApp` and a `linkDomain`: `https://{linkDomain}/__/auth/links?link=<escaped web link>`.
///
/// ```swift
/// let builder = ActionLinkBuilder(actionURL: "https://demo.firebaseapp.com/__/auth/action", apiKey: "key")
/// let link = builder.link(for: .verifyEmail, code: code, settings: settings, lang: "pl")
/// ```
public struct ActionLinkBuilder: Sendable {
    public let actionURL: String
    public let apiKey: String

    /// `{actionUrl}?apiKey=…&mode=`: the part of every web link that never changes.
    private let prefix: String

    public init(actionURL: String, apiKey: String) {
        self.actionURL = actionURL
        self.apiKey = apiKey
        prefix = actionURL + (actionURL.contains("?") ? "&" : "?") + "apiKey=\(PercentEncoding.encode(apiKey))&mode="
    }

    /// The link a recipient clicks. `settings` must already be validated.
    public func link(for kind: ActionKind, code: String, settings: ActionCodeSettings, lang: String) -> String {
        let web = webLink(for: kind, code: code, continueURL: settings.url, lang: lang)
        if settings.handleCodeInApp, let linkDomain = settings.linkDomain {
            return "https://\(linkDomain.lowercased())/__/auth/links?link=\(PercentEncoding.encode(web, keeping: ":/?"))"
        }
        return web
    }

    /// The web action link handled at `actionURL`.
    public func webLink(for kind: ActionKind, code: String, continueURL: String?, lang: String) -> String {
        var link = prefix
        link += "\(kind.mode)&oobCode=\(PercentEncoding.encode(code))"
        if let continueURL {
            link += "&continueUrl=\(PercentEncoding.encode(continueURL, keeping: ":/"))"
        }
        link += "&lang=\(PercentEncoding.encode(lang))"
        return link
    }
}
