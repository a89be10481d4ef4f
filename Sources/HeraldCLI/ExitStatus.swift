import ArgumentParser
import HeraldCore

/// The exit statuses of every command, one per kind of failure a script may want to tell apart
/// (docs/reference/exit-codes.md lists them).
enum ExitStatus {
    /// Something failed, or some rows of an import were rejected while the others went in.
    static let failure = ExitCode.failure
    /// The command line is wrong: an unknown option, a bad value (ArgumentParser's own status, EX_USAGE).
    static let usage = ExitCode.validationFailure
    /// What the command names does not exist: a campaign, a suppressed address, a webhook endpoint.
    static let notFound = ExitCode(3)
    /// A limit refused the request (a rate limit, a quota, a suppressed recipient).
    static let refused = ExitCode(4)
    /// The ledger is unavailable: locked by another process, read-only, or on a full disk. Try again.
    static let unavailable = ExitCode(5)

    /// The status a failure exits with.
    static func of(_ error: any Error) -> ExitCode {
        if error is ValidationError { return usage }
        guard let error = error as? HeraldError else { return failure }
        switch error.code {
        case .argumentError, .invalidArgument, .invalidEmail, .missingEmail, .invalidNewEmail, .missingNewEmail, .invalidLocale,
            .invalidContinueURI, .missingContinueURI, .unauthorizedDomain, .invalidDisplayName:
            return usage
        case .notFound, .emailNotFound, .userNotFound:
            return notFound
        case .tooManyAttempts, .quotaExceeded, .recipientSuppressed:
            return refused
        case .unavailable:
            return unavailable
        default:
            return failure
        }
    }
}
