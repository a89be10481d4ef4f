import Crypto
import Foundation
import HeraldCore
import HeraldStore

extension SendingService {
    /// Sends one action: validates it, applies the account rules, enumeration protection, the
    /// cooldown and the daily cap, then queues it durably (or, for admins, returns the link).
    ///
    /// `herald send`, each campaign row and `accounts:sendOobCode` go through these rules and get
    /// the same answer for the same request. Admin callers see the true refusal (`EMAIL_NOT_FOUND`,
    /// `USER_NOT_FOUND`, `EMAIL_EXISTS`); app callers under enumeration protection get a silent success.
    /// - Throws: `HeraldError` with Firebase's codes.
    public func send(_ request: SendRequest, as caller: Caller, now: Date = Date()) throws -> SendResult {
        let started = ContinuousClock.now
        switch try refusals.limited(now: now, { try plan(request, as: caller, now: now) }) {
        case .queue(let action, let quota):
            let id = try refusals.limited(now: now) {
                try store.enqueue(action, messageDomain: messageDomain, throttle: throttle, quota: quota, now: now)
            }
            return queued(action, id: id, as: caller, since: started)
        case .silent(let action, let reason, let quota):
            try refusals.limited(now: now) { try store.recordSuppressed(action, reason: reason, throttle: throttle, quota: quota, now: now) }
            return silent(action, since: started)
        case .listed(let action, let returnLink):
            return try listed(action, returnLink: returnLink, now: now)
        }
    }

    /// `send(_:as:)` for a request that may name its account by an ID token (an app's VERIFY_EMAIL and
    /// VERIFY_AND_CHANGE_EMAIL): the token is verified first, then the same rules run.
    ///
    /// The rules run on the calling task's thread when they read nothing that can wait (an app that owns its users,
    /// and a ledger that answers the suppression check in place: `answersSuppressionsInPlace`), else on a blocking
    /// thread; the durable write then suspends the task, not a thread, until its group commit is on disk. Before, the
    /// whole send ran on a blocking thread that waited for the commit: two more thread hand-offs per request, and
    /// sixteen requests in flight were sixteen threads for two cores to schedule (#12). A ledger whose durable writes
    /// block (`suspendsDurableWrites` false: PostgreSQL) runs the whole blocking send on one blocking thread, not the
    /// rules on one and the write on another.
    public func send(_ request: SendRequest, as caller: Caller, now: Date = Date()) async throws -> SendResult {
        var request = request
        if let token = request.idToken, ownsAccounts, request.kind == .verifyEmail || request.kind == .verifyAndChangeEmail {
            request.signedIn = try await sessions.account(forIDToken: token)
        }
        let resolved = request
        let inPlace = !ownsAccounts && store.answersSuppressionsInPlace
        // A ledger whose durable writes block (PostgreSQL) runs the rules and the write in one hop: the same
        // blocking send as the CLI's, on one blocking thread.
        if !inPlace && !store.suspendsDurableWrites { return try await offload { try self.send(resolved, as: caller, now: now) } }
        let started = ContinuousClock.now
        let step = try await refusals.limited(now: now) {
            inPlace ? try self.plan(resolved, as: caller, now: now) : try await offload { try self.plan(resolved, as: caller, now: now) }
        }
        switch step {
        case .queue(let action, let quota):
            let id = try await refusals.limited(now: now) {
                try await store.enqueue(action, messageDomain: messageDomain, throttle: throttle, quota: quota, now: now)
            }
            return queued(action, id: id, as: caller, since: started)
        case .silent(let action, let reason, let quota):
            try await refusals.limited(now: now) {
                try await store.recordSuppressed(action, reason: reason, throttle: throttle, quota: quota, now: now)
            }
            // The wait is a thread's sleep, as the blocking send's: its spread is what the matcher was measured with.
            return try await offload { self.silent(action, since: started) }
        case .listed(let action, let returnLink):
            return try await offload { try self.listed(action, returnLink: returnLink, now: now) }
        }
    }

    /// What the rules decided for a request they did not refuse: the write that answers it.
    enum SendStep: Sendable {
        /// Queue the email (`OutboxStore.enqueue`), counted against the app's quotas.
        case queue(ActionRequest, quota: SendQuota?)
        /// Answer an app as if queued, sending nothing: record it (`AbuseStore.recordSuppressed`), as throttled and
        /// counted as a real send.
        case silent(ActionRequest, reason: HeraldError.Code, quota: SendQuota?)
        /// Mint a code without mail: an admin's returned link, or an emulator's listed code.
        case listed(ActionRequest, returnLink: Bool)
    }

    /// The rules of `send(_:as:)` up to its write: validation, the abuse limit per client address, the account rules,
    /// the suppression list and enumeration protection. Reads only.
    /// - Throws: the refusal, as a `HeraldError`, or as a `LimitRefusal` for the caller to count (`limited`).
    func plan(_ request: SendRequest, as caller: Caller, now: Date) throws -> SendStep {
        guard request.kind.isRequestable else {
            throw HeraldError(.invalidRequestType, "\(request.kind.requestType) is sent by Herald after an email change")
        }
        if request.returnLink && caller != .admin { throw HeraldError(.insufficientPermission, "returnOobLink is for admin calls") }
        if request.settings.typedCode?.wanted == true {
            guard policy.typedCodes != .off else { throw HeraldError(.operationNotAllowed, "typed codes are off (policy.typedCodes)") }
            guard request.kind.takesTypedCode else { throw HeraldError(.invalidArgument, "recover-email mail carries no typed code") }
        }
        // Abuse limits are for app callers; administrators (the CLI, campaigns, the admin token) are exempt.
        if caller == .app, let ip = request.clientIP, !sendLimiter.take(ip, now: now) {
            throw LimitRefusal(counter: "ip", key: IPNetwork.ledgerKey(ip), error: HeraldError(.tooManyAttempts, ""))
        }
        var target = try resolve(request, as: caller)
        let action = try ActionRequest(
            kind: request.kind, email: target.email, newEmail: target.newEmail, settings: request.settings, locale: request.locale,
            displayName: request.displayName ?? target.displayName, links: links, aliases: limits.recipientAliases)
        // Mail only: an admin's returned link and an emulator's listed code send nothing.
        if target.refusal == nil, !request.returnLink, !server.emulatorMode {
            target.refusal = try suppressionRefusal(action.recipient.value)
        }
        let quota = caller == .app ? sendQuota(for: target, action, from: request.clientIP) : nil
        if let refusal = target.refusal {
            // A suppression is never told to an app caller (it is no Firebase error, and its reason is the
            // recipient's business): they get the usual answer, with or without enumeration protection.
            let silent = server.enumerationProtection || refusal.code == .recipientSuppressed
            guard caller == .app, silent, !request.returnLink else { throw refusal }
            // As durable, as throttled and as counted as a real send, so neither the time nor the limits tell them apart.
            return .silent(action, reason: refusal.code, quota: quota)
        }
        if request.returnLink || server.emulatorMode { return .listed(action, returnLink: request.returnLink) }
        return .queue(action, quota: quota)
    }

    /// The answer to a request whose email was queued as row `id`.
    private func queued(_ action: ActionRequest, id: Int64, as caller: Caller, since started: ContinuousClock.Instant) -> SendResult {
        queued.signal()
        if caller == .app { latencies.record(since: started) }
        return SendResult(email: action.email.value, delivery: .queued(outboxID: id))
    }

    /// The answer to a request answered as sent and not sent, after as long as a real send takes.
    private func silent(_ action: ActionRequest, since started: ContinuousClock.Instant) -> SendResult {
        latencies.pad(since: started)
        return SendResult(email: action.email.value, delivery: .silent)
    }

    private func listed(_ action: ActionRequest, returnLink: Bool, now: Date) throws -> SendResult {
        let (code, link) = try codes.mintListedCode(action, now: now)
        return SendResult(email: action.email.value, delivery: returnLink ? .link(code: code, link: link) : .emulated)
    }

    /// The hourly quotas an app request is counted against: the project's, its client network's share of it, and its
    /// account's (the signed-in account, else the account the address names, keyed by a hash of the mailbox the
    /// address spells, `RecipientAliases`, so both paths and every spelling do the same).
    private func sendQuota(for target: Target, _ action: ActionRequest, from clientIP: String?) -> SendQuota {
        let key = target.accountUID ?? "address:" + EmailAddress.ledgerKey(limits.recipientAliases.key(action.email))
        return SendQuota(
            projectPerHour: limits.projectSendsPerHour, accountPerHour: limits.accountSendsPerHour, accountKey: key,
            networkPerHour: limits.networkSendsPerHour, networkKey: clientIP.map(IPNetwork.ledgerKey))
    }

    /// Sends one action to every address of a list, all or nothing: each address passes the same
    /// rules as a single admin send before any is queued (the per-address cooldown is for single
    /// requests; use a campaign to pace bulk mail).
    ///
    /// With a `bulkKey` (see `bulkKey(for:addresses:)`) each recipient is queued once per key: an address
    /// listed twice gets one email, and one an earlier run with the same key queued counts as already queued,
    /// so running a send that failed part-way again queues exactly the rest.
    /// - Throws: the first refusal, as a `BulkSendError` naming the address's index, before anything is
    ///   queued; a failure while queueing as `BulkEnqueueFailure`, which says what the committed batches hold.
    public func sendBulk(_ template: SendRequest, to addresses: [String], bulkKey: String? = nil, now: Date = Date()) throws
        -> BulkEnqueueResult
    {
        // One query for every address's account, and one for the shared new address.
        let standings = ownsAccounts ? try store.standings(emails: addresses.map { $0.lowercased() }) : [:]
        var newEmailTaken = false
        if ownsAccounts, template.kind == .verifyAndChangeEmail, let newEmail = template.newEmail {
            newEmailTaken = try store.account(email: newEmail.lowercased()) != nil
        }
        var requests: [ActionRequest] = []
        requests.reserveCapacity(addresses.count)
        for (index, address) in addresses.enumerated() {
            do {
                let email = try requiredEmail(address)
                let standing = standings[email]
                if ownsAccounts, let refusal = Self.accountRefusal(template.kind, standing) { throw refusal }
                if newEmailTaken { throw HeraldError(.emailExists, "") }
                requests.append(
                    try ActionRequest(
                        kind: template.kind, email: email, newEmail: template.newEmail, settings: template.settings,
                        locale: template.locale, displayName: template.displayName ?? standing?.displayName, links: links,
                        aliases: limits.recipientAliases))
            } catch let error as HeraldError {
                throw BulkSendError(index: index, error: error)
            }
        }
        let suppressed = try store.suppressions(emails: requests.map(\.recipient.value))
        if let index = requests.firstIndex(where: { suppressed[$0.recipient.value]?.stops(campaign: false) ?? false }) {
            let reason = suppressed[requests[index].recipient.value]!.reason
            throw BulkSendError(index: index, error: HeraldError(.recipientSuppressed, reason.rawValue))
        }
        if bulkKey != nil {
            var seen: Set<String> = []
            requests = requests.filter { seen.insert($0.recipient.value).inserted }
        }
        defer { queued.signal() }
        return try store.enqueue(requests, bulkKey: bulkKey, messageDomain: messageDomain, batchSize: 1000, now: now)
    }

    /// The idempotency key of a bulk send: SHA-256 (hex) over the action, every option that shapes the mail
    /// and the sorted, de-duplicated, lower-cased addresses, so the same list with the same options has the same key.
    public static func bulkKey(for template: SendRequest, addresses: [String]) throws -> String {
        struct Shape: Encodable {
            let action: String
            let newEmail: String?
            let locale: String?
            let displayName: String?
            let settings: ActionCodeSettings
            let addresses: [String]
        }
        let listed = Set(addresses.map { $0.lowercased() }).sorted()
        let shape = Shape(
            action: template.kind.rawValue, newEmail: template.newEmail?.lowercased(), locale: template.locale,
            displayName: template.displayName, settings: template.settings, addresses: listed)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Hex.sha256(try encoder.encode(shape))
    }

    /// The refusal of transactional mail to a suppressed address (a hard bounce, a complaint, a manual entry;
    /// an unsubscribe stops only campaigns), naming the reason.
    func suppressionRefusal(_ recipient: String) throws -> HeraldError? {
        guard let suppression = try store.suppressions(emails: [recipient])[recipient], suppression.stops(campaign: false) else {
            return nil
        }
        return HeraldError(.recipientSuppressed, suppression.reason.rawValue)
    }

    /// The per-recipient limits on transactional mail (`policy`).
    var throttle: SendThrottle {
        SendThrottle(cooldown: policy.cooldown, dailyCap: policy.dailyCap)
    }

    /// Whose email a request is for, and why the rules refuse it (nil when they do not).
    struct Target {
        var email: String
        var newEmail: String?
        var displayName: String?
        var refusal: HeraldError?
        /// The signed-in account a verification is for.
        var accountUID: String?
    }

    private func resolve(_ request: SendRequest, as caller: Caller) throws -> Target {
        guard ownsAccounts else {
            // The app owns its users: any valid address may receive any action.
            return Target(email: try requiredEmail(request.email), newEmail: request.newEmail)
        }
        switch request.kind {
        case .signIn:
            return Target(email: try requiredEmail(request.email))
        case .resetPassword:
            let email = try requiredEmail(request.email)
            let standing = try store.standings(emails: [email])[email]
            return Target(email: email, displayName: standing?.displayName, refusal: Self.accountRefusal(.resetPassword, standing))
        case .recoverEmail:
            throw HeraldError(.invalidRequestType, "")
        case .verifyEmail, .verifyAndChangeEmail:
            if request.kind == .verifyAndChangeEmail, request.newEmail?.isEmpty ?? true { throw HeraldError(.missingNewEmail, "") }
            let account: Account
            if let signedIn = request.signedIn {
                account = signedIn
            } else if request.idToken != nil {
                // Only the asynchronous `send` verifies ID tokens.
                throw HeraldError(.invalidIDToken, "")
            } else if caller == .admin {
                let address = try requiredEmail(request.email)
                guard let found = try store.account(email: address) else { throw HeraldError(.userNotFound, "") }
                account = found
            } else {
                // Firebase's answers to an app that names no account.
                throw HeraldError(request.kind == .verifyEmail ? .invalidIDToken : .missingIDToken, "")
            }
            guard let current = account.email else { throw HeraldError(.missingEmail, "the account has no email") }
            var target = Target(email: current, displayName: account.displayName, accountUID: account.uid)
            if request.kind == .verifyAndChangeEmail {
                guard let requested = request.newEmail, !requested.isEmpty else { throw HeraldError(.missingNewEmail, "") }
                let newEmail = try EmailAddress(requested, code: .invalidNewEmail).value
                target.newEmail = newEmail
                if try store.account(email: newEmail) != nil { target.refusal = HeraldError(.emailExists, "") }
            }
            return target
        }
    }

    /// The account rule for sending `kind` to an address with this standing (nil: it has no account)
    /// when Herald owns the accounts: resets need a live account, verifications an account.
    static func accountRefusal(_ kind: ActionKind, _ standing: AccountStanding?) -> HeraldError? {
        switch kind {
        case .signIn:
            return nil
        case .resetPassword:
            guard let standing else { return HeraldError(.emailNotFound, "") }
            return standing.disabled ? HeraldError(.userDisabled, "") : nil
        case .verifyEmail, .verifyAndChangeEmail:
            return standing == nil ? HeraldError(.userNotFound, "") : nil
        case .recoverEmail:
            return HeraldError(.invalidRequestType, "")
        }
    }

    private func requiredEmail(_ email: String?) throws -> String {
        guard let email, !email.isEmpty else { throw HeraldError(.missingEmail, "") }
        return try EmailAddress(email).value
    }

    /// The codes minted in emulator mode, oldest first.
    public var emulatedCodes: [EmulatorCode] { codes.emulatedCodes }

}

/// A bulk send refused one address; nothing was queued.
public struct BulkSendError: Error, Sendable {
    /// The position of the refused address in the list.
    public let index: Int
    public let error: HeraldError
}
