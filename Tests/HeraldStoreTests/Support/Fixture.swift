import Foundation
import HeraldCore
import HeraldStore

/// What the store suites share: a configuration, valid requests, delivery records and a visitor.
enum Fixture {
    static let messageDomain = "herald.test"
    static let visitor = Visitor(ip: "203.0.113.7", userAgent: "HeraldStoreTests")
    static let links = HeraldConfiguration.Links()

    /// The default configuration with a one-minute lease and three attempts, then `change`.
    static func configuration(_ change: (inout HeraldConfiguration) -> Void = { _ in }) -> HeraldConfiguration {
        var configuration = HeraldConfiguration()
        configuration.worker.lease = 60
        configuration.worker.maxAttempts = 3
        change(&configuration)
        return configuration
    }

    static func policy(_ change: (inout HeraldConfiguration) -> Void = { _ in }) -> ClaimPolicy {
        ClaimPolicy(configuration(change))
    }

    /// A valid request; sign-in gets the in-app continue URL it requires, a change its new address.
    static func request(_ kind: ActionKind = .verifyEmail, _ email: String = "ada@example.com") throws -> ActionRequest {
        switch kind {
        case .signIn:
            try ActionRequest(
                kind: kind, email: email, settings: ActionCodeSettings(url: "https://localhost/finish", handleCodeInApp: true), links: links)
        case .verifyAndChangeEmail, .recoverEmail:
            try ActionRequest(kind: kind, email: email, newEmail: "new-" + email, links: links)
        case .verifyEmail, .resetPassword:
            try ActionRequest(kind: kind, email: email, links: links)
        }
    }

    static func sent(at date: Date = Date()) -> DeliveryRecord {
        DeliveryRecord(decision: .sent, replyCode: 250, replyText: "250 2.0.0 Ok: queued", startedAt: date, finishedAt: date)
    }

    static func deferred(until retry: Date, at date: Date = Date()) -> DeliveryRecord {
        DeliveryRecord(decision: .deferred(until: retry), replyCode: 451, replyText: "451 4.7.1 Try later", startedAt: date, finishedAt: date)
    }

    static func failed(at date: Date = Date(), reply: String = "550 5.1.1 No such user") -> DeliveryRecord {
        DeliveryRecord(decision: .failed, replyCode: 550, replyText: reply, startedAt: date, finishedAt: date)
    }

    /// No reply to the final dot; with `retryAt` the row goes again then, without it the row ends possibly delivered.
    static func possiblyDelivered(retryAt: Date?, at date: Date = Date()) -> DeliveryRecord {
        DeliveryRecord(
            decision: .possiblyDelivered(retryAt: retryAt), replyCode: nil,
            replyText: "possibly delivered: timed out after 600 s waiting for the reply to the end of data", startedAt: date, finishedAt: date)
    }

    static func dead(at date: Date = Date()) -> DeliveryRecord {
        DeliveryRecord(decision: .dead, replyCode: 451, replyText: "451 4.7.1 Try later", startedAt: date, finishedAt: date)
    }

    /// A new account for `email`, created a second before `now` (at millisecond precision, as stored).
    static func account(
        _ email: String? = "ada@example.com", uid: String = Account.newUID(), verified: Bool = false, passwordHash: String? = nil,
        disabled: Bool = false, now: Date = Date()
    ) -> Account {
        Account(
            uid: uid, email: email, emailVerified: verified, passwordHash: passwordHash, disabled: disabled,
            validSince: now.milliseconds - 1000, createdAt: Date(milliseconds: now.milliseconds - 1000))
    }

    /// Mints a code for `email` and returns its plaintext.
    static func mint(
        _ kind: ActionKind, _ email: String = "ada@example.com", newEmail: String? = nil, lifetime: TimeInterval = 3600, now: Date = Date(),
        in store: any CodeStore
    ) throws -> String {
        try store.mintCode(kind, email: email, newEmail: newEmail, continueURL: nil, lifetime: lifetime, now: now).plaintext
    }

    /// A campaign recipient from line `line` of a recipients file.
    static func recipient(_ email: String, line: Int? = nil, variablesJSON: String? = nil) -> CampaignRecipient {
        CampaignRecipient(email: email, displayName: nil, locale: links.defaultLocale, variablesJSON: variablesJSON, line: line)
    }

    /// Creates (or finds) the campaign `name`, starting at `now`.
    static func campaign(
        _ name: String, _ kind: ActionKind = .verifyEmail, settings: ActionCodeSettings = ActionCodeSettings(), rate: Double? = nil,
        linkLifetime: TimeInterval? = nil, now: Date = Date(), in store: any CampaignStore
    ) throws -> Campaign {
        try store.campaign(
            named: name, kind: kind, settings: settings, rate: rate, startAt: now, linkLifetime: linkLifetime, source: "test", now: now)
    }

    /// Queues `emails` (lines 2, 3, …) as the campaign's rows, all due at `now`.
    @discardableResult
    static func add(_ emails: [String], to campaign: Campaign, now: Date = Date(), in store: any CampaignStore) throws -> [CampaignAddOutcome] {
        var schedule = CampaignSchedule(start: now, interval: 0, position: 0)
        let recipients = emails.enumerated().map { recipient($1, line: $0 + 2) }
        return try store.addRecipients(recipients, to: campaign, schedule: &schedule, messageDomain: messageDomain, now: now)
    }
}
