import Foundation

/// Firebase's `ActionCodeSettings`: where a link continues and how apps may open it.
///
/// Validate against the configured policy before use:
/// ```swift
/// let settings = ActionCodeSettings(url: "https://app.example.com/finish", handleCodeInApp: true)
/// try settings.validate(for: .signIn, authorizedDomains: ["app.example.com"])
/// ```
public struct ActionCodeSettings: Hashable, Sendable, Codable {
    public var url: String?
    public var handleCodeInApp: Bool
    public var iOSBundleId: String?
    public var iOSAppStoreId: String?
    public var androidPackageName: String?
    public var androidInstallApp: Bool
    public var androidMinimumVersion: String?
    public var linkDomain: String?
    public var dynamicLinkDomain: String?
    /// Herald's own, never part of the link: whether the mail carries a code to type beside it, as the request asked
    /// (nil: as `policy.typedCodes` says when the mail is sent).
    public var typedCode: TypedCodeRequest?

    public init(
        url: String? = nil,
        handleCodeInApp: Bool = false,
        iOSBundleId: String? = nil,
        iOSAppStoreId: String? = nil,
        androidPackageName: String? = nil,
        androidInstallApp: Bool = false,
        androidMinimumVersion: String? = nil,
        linkDomain: String? = nil,
        dynamicLinkDomain: String? = nil
    ) {
        self.url = url
        self.handleCodeInApp = handleCodeInApp
        self.iOSBundleId = iOSBundleId
        self.iOSAppStoreId = iOSAppStoreId
        self.androidPackageName = androidPackageName
        self.androidInstallApp = androidInstallApp
        self.androidMinimumVersion = androidMinimumVersion
        self.linkDomain = linkDomain
        self.dynamicLinkDomain = dynamicLinkDomain
    }

    /// True when nothing of the link but defaults is set.
    public var isEmpty: Bool {
        var link = self
        link.typedCode = nil
        return link == ActionCodeSettings()
    }

    /// Checks the settings as Firebase does, throwing its error codes.
    ///
    /// - Throws: `HeraldError` with `MISSING_CONTINUE_URI`, `INVALID_CONTINUE_URI`,
    ///   `UNAUTHORIZED_DOMAIN`, `MISSING_ANDROID_PACKAGE_NAME`, `MISSING_IOS_BUNDLE_ID`,
    ///   `INVALID_HOSTING_LINK_DOMAIN`, `INVALID_DYNAMIC_LINK_DOMAIN` or `ARGUMENT_ERROR`.
    public func validate(for kind: ActionKind, authorizedDomains: [String]) throws {
        let authorized = Set(authorizedDomains.map { $0.lowercased() })
        if dynamicLinkDomain != nil {
            throw HeraldError(
                .invalidDynamicLinkDomain,
                "Firebase Dynamic Links is shut down; use linkDomain (a Hosting link domain) instead"
            )
        }
        if let url {
            guard !url.isEmpty else { throw HeraldError(.missingContinueURI, "the continue URL is empty") }
            guard let host = Self.continueHost(url) else {
                throw HeraldError(.invalidContinueURI, "expected an absolute http(s) URL with a host, got \(EmailAddress.printable(url))")
            }
            guard authorized.contains(host) else {
                throw HeraldError(.unauthorizedDomain, "continue URL host \(host) is not an authorized domain (links.authorizedDomains)")
            }
        } else if kind == .signIn || !isEmpty {
            throw HeraldError(
                .missingContinueURI, "a continue URL is required\(kind == .signIn ? " for email-link sign-in" : " with action code settings")")
        }
        if kind == .signIn && !handleCodeInApp {
            throw HeraldError(.argumentError, "email-link sign-in requires handleCodeInApp=true")
        }
        if let androidPackageName, androidPackageName.isEmpty {
            throw HeraldError(.missingAndroidPackageName, "androidPackageName is empty")
        }
        if androidPackageName == nil && (androidInstallApp || androidMinimumVersion != nil) {
            throw HeraldError(
                .missingAndroidPackageName, "an Android package name is required when androidInstallApp or androidMinimumVersion is set")
        }
        if let iOSBundleId, iOSBundleId.isEmpty {
            throw HeraldError(.missingIOSBundleID, "iOSBundleId is empty")
        }
        if iOSBundleId == nil && iOSAppStoreId != nil {
            throw HeraldError(.missingIOSBundleID, "an iOS bundle ID is required when iOSAppStoreId is set")
        }
        if let linkDomain {
            let host = linkDomain.lowercased()
            guard Hostname.isValid(host) else {
                throw HeraldError(.invalidHostingLinkDomain, "linkDomain must be a bare hostname, got \(EmailAddress.printable(linkDomain))")
            }
            guard authorized.contains(host) else {
                throw HeraldError(.invalidHostingLinkDomain, "linkDomain \(host) is not an authorized domain (links.authorizedDomains)")
            }
        }
    }

    /// The host a browser would go to for an absolute http(s) URL, or nil when the URL is not one, is
    /// read differently by browsers than by Herald, or has a host Herald does not accept. Parsed by
    /// the WHATWG rules (`WebURL`): `https://evil.com\\@app.example.com/` is `evil.com`'s.
    static func continueHost(_ url: String) -> String? {
        guard url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }), let parsed = WebURL(url),
            Hostname.isValid(parsed.host) || parsed.host == "127.0.0.1" || parsed.host == "[::1]"
        else { return nil }
        return parsed.host
    }

    /// Where to send a browser for a continue URL, checked again as at `validate`: the URL as a browser
    /// serializes it (`WebURL.href`), so the `Location` header cannot be read two ways; nil when the URL
    /// is invalid or its host is not an authorized domain.
    public static func redirectTarget(_ url: String, authorizedDomains: [String]) -> String? {
        guard let host = continueHost(url), authorizedDomains.contains(where: { $0.lowercased() == host }) else { return nil }
        return WebURL(url)?.href
    }
}
