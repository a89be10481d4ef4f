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
    ///
    /// Closed over a private enum (as swift-service-lifecycle does): callers use the static
    /// members, adding a code never breaks them, and no ad-hoc code can appear.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case invalidEmail = "INVALID_EMAIL"
            case missingEmail = "MISSING_EMAIL"
            case invalidNewEmail = "INVALID_NEW_EMAIL"
            case missingNewEmail = "MISSING_NEW_EMAIL"
            case missingContinueURI = "MISSING_CONTINUE_URI"
            case invalidContinueURI = "INVALID_CONTINUE_URI"
            case unauthorizedDomain = "UNAUTHORIZED_DOMAIN"
            case missingAndroidPackageName = "MISSING_ANDROID_PACKAGE_NAME"
            case missingIOSBundleID = "MISSING_IOS_BUNDLE_ID"
            case invalidHostingLinkDomain = "INVALID_HOSTING_LINK_DOMAIN"
            case invalidDynamicLinkDomain = "INVALID_DYNAMIC_LINK_DOMAIN"
            case argumentError = "ARGUMENT_ERROR"
            case invalidLocale = "INVALID_LOCALE"
            case invalidHeader = "INVALID_HEADER"
            case invalidDisplayName = "INVALID_DISPLAY_NAME"
            case invalidConfiguration = "INVALID_CONFIGURATION"
            case templateError = "TEMPLATE_ERROR"
            case notFound = "NOT_FOUND"
            case emailExists = "EMAIL_EXISTS"
            case duplicateLocalID = "DUPLICATE_LOCAL_ID"
            case duplicateEmail = "DUPLICATE_EMAIL"
            case duplicateRawID = "DUPLICATE_RAW_ID"
            case missingUserAccount = "MISSING_USER_ACCOUNT"
            case invalidClaims = "INVALID_CLAIMS"
            case claimsTooLarge = "CLAIMS_TOO_LARGE"
            case forbiddenClaim = "FORBIDDEN_CLAIM"
            case localIDListExceedsLimit = "LOCAL_ID_LIST_EXCEEDS_LIMIT"
            case emailNotFound = "EMAIL_NOT_FOUND"
            case userNotFound = "USER_NOT_FOUND"
            case userDisabled = "USER_DISABLED"
            case invalidOOBCode = "INVALID_OOB_CODE"
            case expiredOOBCode = "EXPIRED_OOB_CODE"
            case missingOOBCode = "MISSING_OOB_CODE"
            case weakPassword = "WEAK_PASSWORD"
            case invalidLoginCredentials = "INVALID_LOGIN_CREDENTIALS"
            case invalidIDToken = "INVALID_ID_TOKEN"
            case tokenExpired = "TOKEN_EXPIRED"
            case missingIDToken = "MISSING_ID_TOKEN"
            case missingRequestType = "MISSING_REQ_TYPE"
            case invalidRequestType = "INVALID_REQ_TYPE"
            case insufficientPermission = "INSUFFICIENT_PERMISSION"
            case tooManyAttempts = "TOO_MANY_ATTEMPTS_TRY_LATER"
            case quotaExceeded = "QUOTA_EXCEEDED"
            case invalidIDPResponse = "INVALID_IDP_RESPONSE"
            case missingRequestURI = "MISSING_REQUEST_URI"
            case invalidRequestURI = "INVALID_REQUEST_URI"
            case missingProviderID = "MISSING_PROVIDER_ID"
            case missingRawID = "MISSING_RAW_ID"
            case invalidCredentialOrProviderID = "INVALID_CREDENTIAL_OR_PROVIDER_ID"
            case missingOrInvalidNonce = "MISSING_OR_INVALID_NONCE"
            case federatedUserIDAlreadyLinked = "FEDERATED_USER_ID_ALREADY_LINKED"
            case invalidArgument = "INVALID_ARGUMENT"
            case missingIdentifier = "MISSING_IDENTIFIER"
            case invalidIdentifier = "INVALID_IDENTIFIER"
            case missingPassword = "MISSING_PASSWORD"
            case invalidPassword = "INVALID_PASSWORD"
            case operationNotAllowed = "OPERATION_NOT_ALLOWED"
            case projectNotFound = "PROJECT_NOT_FOUND"
            case missingGrantType = "MISSING_GRANT_TYPE"
            case invalidGrantType = "INVALID_GRANT_TYPE"
            case missingRefreshToken = "MISSING_REFRESH_TOKEN"
            case invalidRefreshToken = "INVALID_REFRESH_TOKEN"
            case missingLocalID = "MISSING_LOCAL_ID"
            case unexpectedParameter = "UNEXPECTED_PARAMETER"
            case missingHashAlgorithm = "MISSING_HASH_ALGORITHM"
            case invalidHashAlgorithm = "INVALID_HASH_ALGORITHM"
            case invalidHashRounds = "INVALID_HASH_ROUNDS"
            case invalidHashMemoryCost = "INVALID_HASH_MEMORY_COST"
            case invalidHashBlockSize = "INVALID_HASH_BLOCK_SIZE"
            case invalidHashParallelization = "INVALID_HASH_PARALLELIZATION"
            case invalidHashDerivedKeyLength = "INVALID_HASH_DERIVED_KEY_LENGTH"
            case invalidHashKey = "INVALID_HASH_KEY"
            case invalidHashSaltSeparator = "INVALID_HASH_SALT_SEPARATOR"
            case invalidPasswordHash = "INVALID_PASSWORD_HASH"
            case invalidPasswordSalt = "INVALID_PASSWORD_SALT"
            case credentialTooOldLoginAgain = "CREDENTIAL_TOO_OLD_LOGIN_AGAIN"
            case unavailable = "UNAVAILABLE"
            case webContextCancelled = "WEB_CONTEXT_CANCELLED"
            /// The address is on the suppression list (a hard bounce, a complaint, an unsubscribe from campaigns).
            case recipientSuppressed = "RECIPIENT_SUPPRESSED"
        }

        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }

        /// The code with this wire form, for codes read back from storage.
        public init?(rawValue: String) {
            guard let backing = Backing(rawValue: rawValue) else { return nil }
            self.backing = backing
        }

        /// The wire form, e.g. `INVALID_OOB_CODE`.
        public var rawValue: String { backing.rawValue }
        public var description: String { rawValue }

        public static let invalidEmail = Code(.invalidEmail)
        public static let invalidIDPResponse = Code(.invalidIDPResponse)
        /// The user turned the sign-in down at the provider (the hosted handler's answer to the app).
        public static let webContextCancelled = Code(.webContextCancelled)
        public static let recipientSuppressed = Code(.recipientSuppressed)
        public static let missingRequestURI = Code(.missingRequestURI)
        /// `signInWithIdp`'s `requestUri` is not an absolute URI.
        public static let invalidRequestURI = Code(.invalidRequestURI)
        /// A provider to link (`linkProviderUserInfo`) names no `providerId`, or no `rawId`.
        public static let missingProviderID = Code(.missingProviderID)
        public static let missingRawID = Code(.missingRawID)
        public static let invalidCredentialOrProviderID = Code(.invalidCredentialOrProviderID)
        public static let missingOrInvalidNonce = Code(.missingOrInvalidNonce)
        public static let federatedUserIDAlreadyLinked = Code(.federatedUserIDAlreadyLinked)
        public static let missingEmail = Code(.missingEmail)
        public static let invalidNewEmail = Code(.invalidNewEmail)
        public static let missingNewEmail = Code(.missingNewEmail)
        public static let missingContinueURI = Code(.missingContinueURI)
        public static let invalidContinueURI = Code(.invalidContinueURI)
        public static let unauthorizedDomain = Code(.unauthorizedDomain)
        public static let missingAndroidPackageName = Code(.missingAndroidPackageName)
        public static let missingIOSBundleID = Code(.missingIOSBundleID)
        public static let invalidHostingLinkDomain = Code(.invalidHostingLinkDomain)
        public static let invalidDynamicLinkDomain = Code(.invalidDynamicLinkDomain)
        public static let argumentError = Code(.argumentError)
        public static let invalidLocale = Code(.invalidLocale)
        public static let invalidHeader = Code(.invalidHeader)
        public static let invalidDisplayName = Code(.invalidDisplayName)
        public static let invalidConfiguration = Code(.invalidConfiguration)
        public static let templateError = Code(.templateError)
        public static let notFound = Code(.notFound)
        public static let emailExists = Code(.emailExists)
        public static let duplicateLocalID = Code(.duplicateLocalID)
        /// Two users of one import share an email (with `sanityCheck`).
        public static let duplicateEmail = Code(.duplicateEmail)
        /// Two users of one import share a provider identity (with `sanityCheck`).
        public static let duplicateRawID = Code(.duplicateRawID)
        /// An import (`accounts:batchCreate`) with no users.
        public static let missingUserAccount = Code(.missingUserAccount)
        /// Custom claims (`customAttributes`) that are not a JSON object.
        public static let invalidClaims = Code(.invalidClaims)
        /// Custom claims over 1,000 characters.
        public static let claimsTooLarge = Code(.claimsTooLarge)
        /// Custom claims naming a claim ID tokens reserve (`sub`, `aud`, …).
        public static let forbiddenClaim = Code(.forbiddenClaim)
        /// A batch delete of no uids, or of more than 1,000.
        public static let localIDListExceedsLimit = Code(.localIDListExceedsLimit)
        public static let emailNotFound = Code(.emailNotFound)
        public static let userNotFound = Code(.userNotFound)
        public static let userDisabled = Code(.userDisabled)
        public static let invalidOOBCode = Code(.invalidOOBCode)
        public static let expiredOOBCode = Code(.expiredOOBCode)
        public static let missingOOBCode = Code(.missingOOBCode)
        public static let weakPassword = Code(.weakPassword)
        public static let invalidLoginCredentials = Code(.invalidLoginCredentials)
        public static let invalidIDToken = Code(.invalidIDToken)
        public static let tokenExpired = Code(.tokenExpired)
        public static let missingIDToken = Code(.missingIDToken)
        public static let missingRequestType = Code(.missingRequestType)
        public static let invalidRequestType = Code(.invalidRequestType)
        public static let insufficientPermission = Code(.insufficientPermission)
        public static let tooManyAttempts = Code(.tooManyAttempts)
        /// The project's hourly quota of app-initiated emails (`limits.projectSendsPerHour`) is spent.
        public static let quotaExceeded = Code(.quotaExceeded)
        public static let invalidArgument = Code(.invalidArgument)
        public static let missingIdentifier = Code(.missingIdentifier)
        public static let invalidIdentifier = Code(.invalidIdentifier)
        public static let missingPassword = Code(.missingPassword)
        public static let invalidPassword = Code(.invalidPassword)
        public static let operationNotAllowed = Code(.operationNotAllowed)
        public static let projectNotFound = Code(.projectNotFound)
        public static let missingGrantType = Code(.missingGrantType)
        public static let invalidGrantType = Code(.invalidGrantType)
        public static let missingRefreshToken = Code(.missingRefreshToken)
        public static let invalidRefreshToken = Code(.invalidRefreshToken)
        public static let missingLocalID = Code(.missingLocalID)
        public static let unexpectedParameter = Code(.unexpectedParameter)
        // The hash fields of an import (accounts:batchCreate), named as firebase-admin names them.
        public static let missingHashAlgorithm = Code(.missingHashAlgorithm)
        public static let invalidHashAlgorithm = Code(.invalidHashAlgorithm)
        public static let invalidHashRounds = Code(.invalidHashRounds)
        public static let invalidHashMemoryCost = Code(.invalidHashMemoryCost)
        public static let invalidHashBlockSize = Code(.invalidHashBlockSize)
        public static let invalidHashParallelization = Code(.invalidHashParallelization)
        public static let invalidHashDerivedKeyLength = Code(.invalidHashDerivedKeyLength)
        public static let invalidHashKey = Code(.invalidHashKey)
        public static let invalidHashSaltSeparator = Code(.invalidHashSaltSeparator)
        /// One imported user's `passwordHash` is not base64, or not a hash the batch's algorithm can have made.
        public static let invalidPasswordHash = Code(.invalidPasswordHash)
        public static let invalidPasswordSalt = Code(.invalidPasswordSalt)
        public static let credentialTooOldLoginAgain = Code(.credentialTooOldLoginAgain)
        /// The ledger cannot be read or committed right now (busy, locked, read-only, full, I/O): try again later.
        public static let unavailable = Code(.unavailable)
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? code.rawValue : "\(code.rawValue) : \(detail)" }
}
