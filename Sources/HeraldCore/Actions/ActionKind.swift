/// The email actions Herald sends, with their Firebase names.
public enum ActionKind: String, CaseIterable, Sendable, Codable {
    case signIn = "sign-in"
    case verifyEmail = "verify-email"
    case resetPassword = "reset-password"
    case verifyAndChangeEmail = "verify-and-change-email"
    /// Sent by Herald itself to the old address after an email change: the link changes it back.
    case recoverEmail = "recover-email"

    /// Whether its mail may carry a code to type beside the link (`policy.typedCodes`): every action but email
    /// recovery, whose one use is undoing a change from the mailbox it replaced.
    public var takesTypedCode: Bool { self != .recoverEmail }

    /// The link's `mode` parameter (`signIn`, `verifyEmail`, …).
    public var mode: String {
        switch self {
        case .signIn: "signIn"
        case .verifyEmail: "verifyEmail"
        case .resetPassword: "resetPassword"
        case .verifyAndChangeEmail: "verifyAndChangeEmail"
        case .recoverEmail: "recoverEmail"
        }
    }

    /// The Identity Toolkit `requestType` (`EMAIL_SIGNIN`, `VERIFY_EMAIL`, …).
    public var requestType: String {
        switch self {
        case .signIn: "EMAIL_SIGNIN"
        case .verifyEmail: "VERIFY_EMAIL"
        case .resetPassword: "PASSWORD_RESET"
        case .verifyAndChangeEmail: "VERIFY_AND_CHANGE_EMAIL"
        case .recoverEmail: "RECOVER_EMAIL"
        }
    }

    public init?(mode: String) {
        guard let kind = Self.allCases.first(where: { $0.mode == mode }) else { return nil }
        self = kind
    }

    /// Where its email goes: the new address for VERIFY_AND_CHANGE_EMAIL (proving it); the account's
    /// address otherwise, the old one for RECOVER_EMAIL (whose `newEmail` is the address it undoes).
    public func recipient(email: EmailAddress, newEmail: EmailAddress?) -> EmailAddress {
        self == .verifyAndChangeEmail ? newEmail ?? email : email
    }

    /// Whether a request may ask for it (`accounts:sendOobCode`, `herald send`, campaigns); RECOVER_EMAIL
    /// only follows an email change.
    public var isRequestable: Bool { self != .recoverEmail }

    /// protobuf-JSON's number for each `requestType` (`OobReqType`), which clients may send instead of the name.
    public static func requestType(number: Int) -> String? {
        let names = [
            0: "OOB_REQ_TYPE_UNSPECIFIED", 1: "PASSWORD_RESET", 2: "OLD_EMAIL_AGREE", 3: "NEW_EMAIL_ACCEPT", 4: "VERIFY_EMAIL",
            5: "RECOVER_EMAIL", 6: "EMAIL_SIGNIN", 7: "VERIFY_AND_CHANGE_EMAIL", 8: "REVERT_SECOND_FACTOR_ADDITION",
        ]
        return names[number]
    }

    public init?(requestType: String) {
        guard let kind = Self.allCases.first(where: { $0.requestType == requestType }) else { return nil }
        self = kind
    }
}
