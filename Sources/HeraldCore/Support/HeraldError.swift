/// An error with a stable, Firebase-compatible code and a human detail.
///
/// The `description` is `CODE : detail`, the form Firebase clients split on. Details never
/// carry secrets or plaintext codes.
///
/// ```swift
/// throw HeraldError(.unauthorizedDomain, "continue URL host evil.example is not an authorized domain")
/// ```
public struct HeraldError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable error code; its raw value is the Firebase error string where one exists.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidEmail = Code("INVALID_EMAIL")
        public static let missingEmail = Code("MISSING_EMAIL")
        public static let invalidNewEmail = Code("INVALID_NEW_EMAIL")
        public static let missingNewEmail = Code("MISSING_NEW_EMAIL")
        public static let missingContinueURI = Code("MISSING_CONTINUE_URI")
        public static let invalidContinueURI = Code("INVALID_CONTINUE_URI")
        public static let unauthorizedDomain = Code("UNAUTHORIZED_DOMAIN")
        public static let missingAndroidPackageName = Code("MISSING_ANDROID_PACKAGE_NAME")
        public static let missingIOSBundleID = Code("MISSING_IOS_BUNDLE_ID")
        public static let invalidHostingLinkDomain = Code("INVALID_HOSTING_LINK_DOMAIN")
        public static let invalidDynamicLinkDomain = Code("INVALID_DYNAMIC_LINK_DOMAIN")
        public static let argumentError = Code("ARGUMENT_ERROR")
        public static let invalidLocale = Code("INVALID_LOCALE")
        public static let invalidHeader = Code("INVALID_HEADER")
        public static let invalidDisplayName = Code("INVALID_DISPLAY_NAME")
        public static let invalidConfiguration = Code("INVALID_CONFIGURATION")
        public static let templateError = Code("TEMPLATE_ERROR")
        public static let notFound = Code("NOT_FOUND")
        public static let emailExists = Code("EMAIL_EXISTS")
        public static let duplicateLocalID = Code("DUPLICATE_LOCAL_ID")
        public static let emailNotFound = Code("EMAIL_NOT_FOUND")
        public static let userNotFound = Code("USER_NOT_FOUND")
        public static let userDisabled = Code("USER_DISABLED")
        public static let invalidOOBCode = Code("INVALID_OOB_CODE")
        public static let expiredOOBCode = Code("EXPIRED_OOB_CODE")
        public static let missingOOBCode = Code("MISSING_OOB_CODE")
        public static let weakPassword = Code("WEAK_PASSWORD")
        public static let invalidLoginCredentials = Code("INVALID_LOGIN_CREDENTIALS")
        public static let invalidIDToken = Code("INVALID_ID_TOKEN")
        public static let tokenExpired = Code("TOKEN_EXPIRED")
        public static let missingIDToken = Code("MISSING_ID_TOKEN")
        public static let missingRequestType = Code("MISSING_REQ_TYPE")
        public static let invalidRequestType = Code("INVALID_REQ_TYPE")
        public static let insufficientPermission = Code("INSUFFICIENT_PERMISSION")
        public static let tooManyAttempts = Code("TOO_MANY_ATTEMPTS_TRY_LATER")
        public static let invalidArgument = Code("INVALID_ARGUMENT")
        public static let missingIdentifier = Code("MISSING_IDENTIFIER")
        public static let invalidIdentifier = Code("INVALID_IDENTIFIER")
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? code.rawValue : "\(code.rawValue) : \(detail)" }
}
