import Foundation
import HeraldCore

/// When a campaign's rows fall due: `start + position / rate`.
public struct CampaignSchedule: Sendable, Hashable {
    public var start: Date
    /// Seconds between two rows; 0 sends as fast as the worker goes.
    public var interval: TimeInterval
    /// Rows scheduled so far; advances with every imported row.
    public var position: Int64

    public init(start: Date, interval: TimeInterval, position: Int64) {
        self.start = start
        self.interval = interval
        self.position = position
    }
}

/// Campaigns: creation, queueing their recipients, control.
public protocol CampaignStore: Sendable {
    /// The campaign called `name`, created with these settings if it does not exist yet.
    ///
    /// - Throws: `ARGUMENT_ERROR` when a campaign of that name exists for another action.
    func campaign(
        named name: String, kind: ActionKind, settings: ActionCodeSettings, rate: Double?, startAt: Date, linkLifetime: TimeInterval?,
        source: String, now: Date
    ) throws -> Campaign

    /// - Throws: `NOT_FOUND`.
    func campaign(id: Int64) throws -> Campaign

    /// Every campaign, oldest first.
    func campaigns() throws -> [Campaign]

    /// Replaces the campaign's own templates with `files` (none: it uses the global templates).
    func setTemplates(_ files: [TemplateFile], campaign id: Int64) throws

    /// Outbox rows per state for one campaign, with its pruned rows (`ledger.messageRetention`) in the states they
    /// left in.
    func counts(campaign id: Int64) throws -> [OutboxState: Int]

    /// Outbox rows per state of every campaign that has rows (pruned ones too), in one read of the tallies.
    func campaignCounts() throws -> [Int64: [OutboxState: Int]]

    /// Messages each campaign sent since `since` (attempts that ended in `sent`), for campaigns that sent any: their
    /// live rate.
    func campaignSends(since: Date) throws -> [Int64: Int]

    /// Queues recipients as the campaign's rows in one durable transaction, one outcome per recipient, in order.
    /// Re-running an import is idempotent per campaign and address.
    func addRecipients(
        _ recipients: [CampaignRecipient], to campaign: Campaign, schedule: inout CampaignSchedule, messageDomain: String, now: Date
    ) throws -> [CampaignAddOutcome]

    /// Rows already queued for a campaign: where a resumed import continues its schedule.
    func importedCount(campaign id: Int64) throws -> Int64

    /// Records how many rows the campaign's last import rejected.
    func setRejected(campaign id: Int64, count: Int, now: Date) throws

    /// Stops the worker from sending the campaign's rows; they stay queued.
    func pause(campaign id: Int64, now: Date) throws

    /// Lets the worker send again; with a rate, the remaining rows are spaced out from now.
    func resume(campaign id: Int64, now: Date) throws

    /// Cancels the campaign: every row not yet sent becomes `cancelled`; returns how many.
    func cancel(campaign id: Int64, now: Date) throws -> Int

    /// A page of the accounts with an email that are not disabled (optionally only unverified ones), oldest first:
    /// up to `limit` after `after` (the last of the page before).
    func campaignAccounts(unverifiedOnly: Bool, after: CampaignAccount?, limit: Int) throws -> [CampaignAccount]
}

/// An account a campaign from the account store mails; its creation time and uid place it in the listing.
public struct CampaignAccount: Sendable, Hashable {
    public let uid: String
    /// Milliseconds since 1970.
    public let createdAt: Int64
    public let email: String
    public let displayName: String?

    public init(uid: String, createdAt: Int64, email: String, displayName: String?) {
        self.uid = uid
        self.createdAt = createdAt
        self.email = email
        self.displayName = displayName
    }
}
