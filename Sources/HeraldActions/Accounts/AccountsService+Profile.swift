import Foundation
import HeraldCore
import HeraldStore

/// A signed-in user's own account: the SDKs' `updateEmail`, `updatePassword`, `updateProfile` and `delete`.
extension AccountsService {
    /// Applies the user's own changes in one transaction. A new email is unproven, ends every session and
    /// sends the old address a RECOVER_EMAIL link that changes it back; a new password ends every session too.
    /// The answer carries a new session whenever the old one ended (or `returnSecureToken` asks).
    ///
    /// Changing the email or the password needs a recent sign-in (the session's `auth_time`), as Firebase
    /// requires: a stolen refresh token alone cannot take the account over.
    ///
    /// - Throws: the ID token's errors, `CREDENTIAL_TOO_OLD_LOGIN_AGAIN`, `INVALID_EMAIL`, `EMAIL_EXISTS`,
    ///   `WEAK_PASSWORD`, `INVALID_DISPLAY_NAME`;
    ///   `OPERATION_NOT_ALLOWED` for an email change under enumeration protection (verify the new address
    ///   first: VERIFY_AND_CHANGE_EMAIL), as Firebase answers.
    public func updateOwnAccount(idToken: String?, _ edit: ProfileEdit, now: Date = Date()) async throws -> ProfileUpdate {
        let (current, claims) = try await sessions.signedIn(idToken)
        let newEmail = try edit.email.map { try EmailAddress($0).value }
        if (newEmail != nil && newEmail != current.email) || edit.password != nil || edit.deleteAttributes.contains("PASSWORD") {
            try Self.requireRecentSignIn(claims, now: now)
        }
        // Giving a guest (no email yet) an address changes nothing anyone could be told about: only a change counts.
        if let newEmail, let oldEmail = current.email, newEmail != oldEmail, server.enumerationProtection {
            throw HeraldError(.operationNotAllowed, "Please verify the new email before changing email.")
        }
        if let password = edit.password { try PasswordHasher.checkStrength(password) }
        if let newEmail, let oldEmail = current.email, newEmail != oldEmail {
            // The change sends its recovery notice whatever happens, so the change is what the account's and the
            // project's hourly quotas count: changing back and forth cannot mail an address without end.
            let quota = SendQuota(
                projectPerHour: limits.projectSendsPerHour, accountPerHour: limits.accountSendsPerHour, accountKey: current.uid)
            try await offload { try self.refusals.limited(now: now) { try self.store.chargeQuota(quota, now: now) } }
        }
        let displayName = try edit.displayName.map(DisplayName.validate)
        let store = store
        let (before, account) = try await offload { () throws -> (Account, Account) in
            let hash = try edit.password.map(PasswordHasher.hash)  // slow on purpose: outside the transaction
            var before: Account?
            let after = try store.updateAccount(uid: current.uid) { account in
                before = account
                // Sessions end as the change commits: a sign-in racing the slow hash is ended too.
                let committing = max(now, Date())
                if let newEmail, newEmail != account.email { account.changeEmail(to: newEmail, now: committing) }
                if let hash {
                    account.passwordHash = hash
                    account.endSessions(at: committing)
                    account.addProvider("password")
                }
                if edit.endSessions { account.endSessions(at: committing) }
                if let displayName { account.displayName = displayName }
                if let photoURL = edit.photoURL { account.photoURL = photoURL }
                if edit.deleteAttributes.contains("DISPLAY_NAME") { account.displayName = nil }
                if edit.deleteAttributes.contains("PHOTO_URL") { account.photoURL = nil }
                for provider in edit.deleteProviders {
                    account.providers.removeAll { $0 == provider }
                    if provider == "password" {
                        account.passwordHash = nil
                        account.emailLinkSignin = false
                        account.email = nil
                        account.emailVerified = false
                    }
                }
                if edit.deleteAttributes.contains("PASSWORD") {
                    account.passwordHash = nil
                    account.providers.removeAll { $0 == "password" && !account.emailLinkSignin }
                }
            }
            return (before ?? current, after)
        }
        if let oldEmail = before.email, let changed = account.email, oldEmail != changed {
            do {
                try await sendRecovery(of: account, from: oldEmail, to: changed, locale: edit.locale, now: now)
            } catch {
                // The change is committed; the user must still get their answer (and new tokens).
                logger.error("the recovery email after an email change was not queued", metadata: ["uid": "\(account.uid)", "error": "\(error)"])
            }
        }
        let sessionEnded = account.validSince > before.validSince
        guard sessionEnded || edit.returnSecureToken else { return ProfileUpdate(account: account, session: nil) }
        let provider = edit.password != nil ? "password" : claims.signInProvider
        return ProfileUpdate(account: account, session: try await sessions.session(for: account, provider: provider))
    }

    /// Deletes the signed-in user's own account.
    ///
    /// - Throws: the ID token's errors, `CREDENTIAL_TOO_OLD_LOGIN_AGAIN`.
    public func deleteOwnAccount(idToken: String?, now: Date = Date()) async throws {
        let (account, claims) = try await sessions.signedIn(idToken)
        try Self.requireRecentSignIn(claims, now: now)
        try await offload { try self.deleteAccount(uid: account.uid) }
    }

    /// How recent a sign-in must be for sensitive changes (Firebase's "requires recent login").
    static let recentSignIn: TimeInterval = 300

    /// - Throws: `CREDENTIAL_TOO_OLD_LOGIN_AGAIN` when the session began longer ago than `recentSignIn`.
    static func requireRecentSignIn(_ claims: IDTokens.Claims, now: Date) throws {
        guard now.timeIntervalSince1970 - Double(claims.authTime) <= recentSignIn else {
            throw HeraldError(.credentialTooOldLoginAgain, "")
        }
    }

    /// Queues (or, in emulator mode, lists) the RECOVER_EMAIL link to the address an email change replaced.
    /// It is a security notice: no cooldown or daily cap holds it back.
    private func sendRecovery(of account: Account, from oldEmail: String, to newEmail: String, locale: String?, now: Date) async throws {
        let action = try ActionRequest(
            kind: .recoverEmail, email: oldEmail, newEmail: newEmail, locale: locale.flatMap { try? LocaleTag($0).value },
            displayName: account.displayName, links: links, aliases: limits.recipientAliases)
        try await offload {
            if self.server.emulatorMode {
                _ = try self.codes.mintListedCode(action, now: now)
            } else {
                _ = try self.store.enqueue(
                    action, messageDomain: self.messageDomain, throttle: SendThrottle(cooldown: 0, dailyCap: Int.max), now: now)
                self.queued.signal()
            }
        }
    }
}
