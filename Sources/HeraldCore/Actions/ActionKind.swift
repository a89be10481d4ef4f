/// The email actions Herald sends, with their Firebase names.
public enum ActionKind: String, CaseIterable, Sendable, Codable {
    case signIn = "sign-in"
    case verifyEmail = "verify-email"
    case resetPassword = "reset-password"
    case verifyAndChangeEmail = "verify-and-change-email"

    /// The link's `mode` parameter (`signIn`, `verifyEmail`, …).
    public var mode: String {
        switch self {
        case .signIn: "signIn"
        case .verifyEmail: "verifyEmail"
        case .resetPassword: "resetPassword"
        case .verifyAndChangeEmail: "verifyAndChangeEmail"
        }
    }

    /// The Identity Toolkit `requestType` (`EMAIL_SIGNIN`, `VERIFY_EMAIL`, …).
    public var requestType: String {
        switch self {
        case .signIn: "EMAIL_SIGNIN"
        case .verifyEmail: "VERIFY_EMAIL"
        case .resetPassword: "PASSWORD_RESET"
        case .verifyAndChangeEmail: "VERIFY_AND_CHANGE_EMAIL"
        }
    }

    public init?(mode: String) {
        guard let kind = Self.allCases.first(where: { $0.mode == mode }) else { return nil }
        self = kind
    }

    public init?(requestType: String) {
        guard let kind = Self.allCases.first(where: { $0.requestType == requestType }) else { return nil }
        self = kind
    }
}
