import Foundation
import HeraldCore
import HeraldStore

/// Accounts and credentials, when Herald owns the accounts (`accounts.owner: herald`).
extension AccountsService {
    /// Creates an account: an app signs itself up (email and password required, then signed in);
    /// an administrator may set the uid, verification and disabled flags.
    ///
    /// - Throws: `MISSING_EMAIL`, `MISSING_PASSWORD`, `INSUFFICIENT_PERMISSION`, `WEAK_PASSWORD`, `EMAIL_EXISTS`,
    ///   `INVALID_EMAIL`, `DUPLICATE_LOCAL_ID`.
    public func signUp(_ request: SignUpRequest, as caller: Caller, clientIP: String? = nil, now: Date = Date()) async throws
        -> SignUpResult
    {
        if caller == .app, let ip = clientIP, !signUpLimiter.take(ip, now: now) {
            let refusal = LimitRefusal(counter: "signup-ip", key: IPNetwork.ledgerKey(ip), error: HeraldError(.tooManyAttempts, ""))
            throw try await offload { self.refusals.refused(refusal, now: now) }
        }
        let account = try await offload { try self.createAccount(request, as: caller, now: now) }
        guard caller == .app else { return SignUpResult(account: account, session: nil) }
        // A guest's session is Firebase's `anonymous` sign-in.
        let provider = account.email == nil ? "anonymous" : "password"
        return SignUpResult(account: account, session: try await sessions.session(for: account, provider: provider, now: now))
    }

    /// Creates the account of a sign-up (see `signUp`), without a session.
    public func createAccount(_ request: SignUpRequest, as caller: Caller, now: Date = Date()) throws -> Account {
        try requireAccountOwnership("signUp")
        let admin = caller == .admin
        if request.localId != nil && !admin { throw HeraldError(.unexpectedParameter, "User ID") }
        let email = try request.email.map { try EmailAddress($0).value }
        // An app's sign-up with neither is an anonymous account (a guest), which a password, an email link or
        // a provider later upgrades in place; one without the other is incomplete.
        if !admin && (email == nil) != (request.password == nil) {
            throw HeraldError(email == nil ? .missingEmail : .missingPassword, "")
        }
        if let password = request.password { try PasswordHasher.checkStrength(password) }
        if let email, try store.account(email: email) != nil { throw HeraldError(.emailExists, "") }  // before the slow hash
        if let uid = request.localId, try store.account(uid: uid) != nil { throw HeraldError(.duplicateLocalID, "") }
        let account = Account(
            uid: request.localId ?? Account.newUID(), email: email, emailVerified: admin ? request.emailVerified ?? false : false,
            passwordHash: try request.password.map(PasswordHasher.hash), displayName: try request.displayName.map(DisplayName.validate),
            disabled: admin ? request.disabled ?? false : false, validSince: now.milliseconds - 1000, createdAt: now,
            lastLoginAt: admin ? nil : now, providers: email != nil && request.password != nil ? ["password"] : [],
            photoURL: admin ? request.photoURL : nil)  // an app's sign-up sets no photo, as Firebase's does
        try store.createAccount(account)
        return account
    }

    /// Signs in with email and password; an unknown address takes as long as a wrong password.
    ///
    /// - Throws: `MISSING_EMAIL`, `MISSING_PASSWORD`, `INVALID_LOGIN_CREDENTIALS` (with enumeration
    ///   protection) or `EMAIL_NOT_FOUND` / `INVALID_PASSWORD`, `USER_DISABLED`.
    ///
    /// Password guessing is limited: after `limits.signInFailuresPerAccount` failures for one address (known or
    /// not, so the limit reveals nothing), or `limits.ipSignInFailuresPerHour` from one client, sign-ins answer
    /// `TOO_MANY_ATTEMPTS_TRY_LATER` without checking the password, as Firebase does.
    public func signInWithPassword(email: String?, password: String?, clientIP: String? = nil, now: Date = Date()) async throws
        -> Session
    {
        let account = try await offload {
            try self.guardingGuesses(email: email, clientIP: clientIP, now: now) {
                try self.checkPassword(email: email, password: password, now: now)
            }
        }
        return try await sessions.session(for: account, now: now)
    }

    /// Runs a password check unless the address or the client has failed too often; counts its failures.
    private func guardingGuesses<T>(email: String?, clientIP: String?, now: Date, _ check: () throws -> T) throws -> T {
        let address = email?.lowercased() ?? ""
        if !address.isEmpty, !accountFailures.allows(address, now: now) {
            throw refusals.refused(
                LimitRefusal(counter: "signin-account", key: EmailAddress.ledgerKey(address), error: Self.lockedOut), now: now)
        }
        if let ip = clientIP, !clientFailures.allows(ip, now: now) {
            throw refusals.refused(LimitRefusal(counter: "signin-ip", key: IPNetwork.ledgerKey(ip), error: Self.lockedOut), now: now)
        }
        do {
            return try check()
        } catch let error as HeraldError where [.invalidLoginCredentials, .invalidPassword, .emailNotFound].contains(error.code) {
            if !address.isEmpty { _ = accountFailures.take(address, now: now) }
            if let ip = clientIP { _ = clientFailures.take(ip, now: now) }
            throw error
        }
    }

    /// Firebase's answer once an account has seen too many failed sign-ins.
    static let lockedOut = HeraldError(
        .tooManyAttempts,
        "Access to this account has been temporarily disabled due to many failed login attempts. You can immediately "
            + "restore it by resetting your password or you can try again later.")

    /// The account whose email and password these are (see `signInWithPassword`), with its login recorded.
    func checkPassword(email: String?, password: String?, now: Date) throws -> Account {
        try requireAccountOwnership("signInWithPassword")
        guard let email else { throw HeraldError(.missingEmail, "") }
        guard (try? EmailAddress(email)) != nil else { throw HeraldError(.invalidEmail, "") }
        guard let password, !password.isEmpty else { throw HeraldError(.missingPassword, "") }
        let protected = server.enumerationProtection
        guard var account = try store.account(email: email.lowercased()) else {
            PasswordHasher.spendVerificationTime(password)
            throw HeraldError(protected ? .invalidLoginCredentials : .emailNotFound, "")
        }
        guard let hash = account.passwordHash, PasswordHasher.verify(password, against: hash) else {
            if account.passwordHash == nil { PasswordHasher.spendVerificationTime(password) }
            throw HeraldError(protected ? .invalidLoginCredentials : .invalidPassword, "")
        }
        guard !account.disabled else { throw HeraldError(.userDisabled, "") }
        account.lastLoginAt = now
        if PasswordHasher.needsRehash(hash) {
            // An imported hash gives way to Herald's own at its first successful use, with the login recorded in the
            // same transaction; a password changed meanwhile is left alone.
            let replacement = try PasswordHasher.hash(password)
            guard try store.replacePasswordHash(uid: account.uid, current: hash, with: replacement, loginAt: now) else {
                // The password changed while this one was checked: it is no longer the account's.
                throw HeraldError(protected ? .invalidLoginCredentials : .invalidPassword, "")
            }
            account.passwordHash = replacement
            return account
        }
        try store.recordLogin(uid: account.uid, at: now)  // only this column: never a stale row
        return account
    }

    /// The accounts with these uids, emails and phone numbers (admin lookup), each once; unknown ones are left out.
    public func accounts(uids: [String], emails: [String], phoneNumbers: [String] = []) throws -> [Account] {
        try requireAccountOwnership("lookup")
        var found: [Account] = []
        var seen: Set<String> = []
        let matches =
            try uids.map { try store.account(uid: $0) } + emails.map { try store.account(email: $0.lowercased()) }
            + phoneNumbers.map { try store.account(phoneNumber: $0) }
        for case let account? in matches where seen.insert(account.uid).inserted { found.append(account) }
        return found
    }

    /// Applies an administrator's edit to one account in one transaction.
    ///
    /// - Throws: `USER_NOT_FOUND`, `WEAK_PASSWORD`, `INVALID_EMAIL`, `EMAIL_EXISTS`, `INVALID_DISPLAY_NAME`, `INVALID_ARGUMENT`,
    ///   `INVALID_CLAIMS`, `CLAIMS_TOO_LARGE`, `FORBIDDEN_CLAIM`.
    public func editAccount(uid: String, _ edit: AccountEdit, now: Date = Date()) throws -> Account {
        try requireAccountOwnership("update")
        if let password = edit.password { try PasswordHasher.checkStrength(password) }
        let hash = try edit.password.map(PasswordHasher.hash)  // slow on purpose: outside the transaction
        let email = try edit.email.map { try EmailAddress($0).value }
        let displayName = try edit.displayName.map(DisplayName.validate)
        let claims = try edit.customAttributes.map(CustomClaims.validate)
        let validSince = try edit.validSince.map { seconds in
            guard let value = Int64(seconds), value >= 0, value < 253_402_300_800 else {
                throw HeraldError(.invalidArgument, "validSince must be Unix seconds")
            }
            // Revoking "now" (firebase-admin's revoke_refresh_tokens sends the current second, which may have
            // ended by the time it arrives) revokes everything issued up to this moment, not only what that
            // second's start precedes. One in the future would lock the account out until then: also "now".
            return value >= Int64(now.timeIntervalSince1970) - 1 ? now.milliseconds : value * 1000
        }
        return try store.updateAccount(uid: uid) { account in
            let committing = max(now, Date())  // after the slow hash: a sign-in racing it is ended too
            // A new address is unproven and ends the account's sessions, as the owner's own change does.
            if let email, email != account.email { account.changeEmail(to: email, now: committing) }
            if let hash {
                account.passwordHash = hash
                account.endSessions(at: committing)
                account.addProvider("password")
            }
            if let displayName { account.displayName = displayName }
            if let verified = edit.emailVerified { account.emailVerified = verified }
            if let disabled = edit.disabled {
                if disabled && !account.disabled { account.endSessions(at: committing) }  // its sessions end for good
                account.disabled = disabled
            }
            if let photoURL = edit.photoURL { account.photoURL = photoURL }
            if edit.deletePhotoURL { account.photoURL = nil }
            if edit.deleteDisplayName { account.displayName = nil }
            if let validSince { account.validSince = validSince }
            if let claims { account.customAttributes = claims }
        }
    }

    /// Deletes an account. - Throws: `USER_NOT_FOUND`.
    public func deleteAccount(uid: String) throws {
        try requireAccountOwnership("delete")
        guard try store.deleteAccount(uid: uid) else { throw HeraldError(.userNotFound, "") }
    }

    /// The sign-in methods of an address, or nothing under enumeration protection.
    ///
    /// - Throws: `MISSING_IDENTIFIER`, `INVALID_IDENTIFIER`, `MISSING_CONTINUE_URI`, `INVALID_CONTINUE_URI`.
    public func signInMethods(identifier: String?, continueURI: String?, sessionId given: String? = nil) throws -> AuthURIResult {
        guard let identifier, !identifier.isEmpty else { throw HeraldError(.missingIdentifier, "") }
        guard let address = try? EmailAddress(identifier) else { throw HeraldError(.invalidIdentifier, "") }
        guard let continueURI, !continueURI.isEmpty else { throw HeraldError(.missingContinueURI, "") }
        guard let url = URLComponents(string: continueURI), url.scheme != nil, url.host?.isEmpty == false else {
            throw HeraldError(.invalidContinueURI, "")
        }
        let sessionId = given.flatMap { $0.isEmpty ? nil : $0 } ?? ActionCode.generate().plaintext
        guard !server.enumerationProtection, ownsAccounts else {
            return AuthURIResult(sessionId: sessionId, registered: nil, allProviders: nil, signinMethods: nil)
        }
        // Firebase finds the address as an account's own, else as the email of a provider linked to one.
        let account = try store.account(email: address.value) ?? store.account(providerEmail: address.value)
        var methods: [String] = []
        if account?.passwordHash != nil { methods.append("password") }
        if account?.emailLinkSignin == true { methods.append("emailLink") }
        methods += (account?.providers ?? []).filter { $0 != "password" && $0 != "emailLink" }
        return AuthURIResult(
            sessionId: sessionId, registered: account != nil, allProviders: account?.providers ?? [], signinMethods: methods)
    }

    /// The provider identities linked to an account (lookup's `providerUserInfo`).
    public func identities(of uid: String) throws -> [FederatedIdentity] {
        try store.identities(uid: uid)
    }

    /// Every account in uid order, handed to `body` a page of `pageSize` at a time so memory stays flat however many
    /// there are (`herald accounts list`); stops after `limit` accounts when given.
    public func listAccounts(limit: Int? = nil, pageSize: Int = 1000, _ body: (Account) throws -> Void) throws {
        try requireAccountOwnership("herald accounts list")
        var after: String?
        var left = limit ?? Int.max
        while left > 0 {
            let wanted = min(pageSize, left)
            let page = try store.accounts(after: after, limit: wanted)
            for account in page { try body(account) }
            guard page.count == wanted, let last = page.last else { return }
            left -= wanted
            after = last.uid
        }
    }

}
