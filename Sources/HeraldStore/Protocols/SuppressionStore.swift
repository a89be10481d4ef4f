import Foundation
import HeraldCore

/// The suppression list and what comes back about sent mail: bounces, complaints, unsubscribes.
public protocol SuppressionStore {
    /// The suppressions among these (lower-cased) addresses, keyed by address.
    func suppressions(emails: [String]) throws -> [String: Suppression]

    /// Whether `suppressions(emails:)` for one address answers from a file on this machine without waiting for another
    /// connection or a pool (the SQLite ledger's `QuickReads`), so a request may ask it on Swift's cooperative pool.
    var answersSuppressionsInPlace: Bool { get }

    /// Adds each entry, or widens an existing one: an entry keeps its first reason and time unless the new one
    /// stops more mail (`campaigns` → `all`). Returns how many addresses were added or widened.
    @discardableResult
    func suppress(_ entries: [Suppression], now: Date) throws -> Int

    /// Removes an address from the list; false when it was not on it.
    func unsuppress(email: String) throws -> Bool

    /// The list in address order, from after `after` (paging), optionally of one reason.
    func listSuppressions(reason: Suppression.Reason?, after: String?, limit: Int) throws -> [Suppression]

    /// The list newest first (by `createdAt`, then address, descending), from after `after` (the previous page's last
    /// entry: paging), optionally of one reason.
    func recentSuppressions(reason: Suppression.Reason?, after: SuppressionCursor?, limit: Int) throws -> [Suppression]

    /// Records a bounce or complaint against its outbox row in one transaction: the row becomes `bounced` or
    /// `complained` (from `sent`, or `bounced` for a complaint), the report goes to `mail_feedback`, and the
    /// address is suppressed — at once for a hard bounce or a complaint, for a soft bounce when it is the
    /// `softLimit`-th of that address within `softWindow`. Nil when there is no such row.
    func recordFeedback(_ feedback: MailFeedback, softLimit: Int, softWindow: TimeInterval, now: Date) throws -> FeedbackOutcome?

    /// A one-click unsubscribe from the campaign mail `outboxID` was: recorded in `mail_feedback` and the
    /// address suppressed from campaigns. Nil when there is no such row (or it was not campaign mail).
    func recordUnsubscribe(outboxID: Int64, now: Date) throws -> FeedbackOutcome?

    /// The row a one-click unsubscribe link names: its recipient, locale and campaign (nil when gone or not campaign mail).
    func unsubscribeTarget(outboxID: Int64) throws -> (email: String, locale: String, campaign: Campaign)?

    /// Bounces and complaints of a campaign's mail, by kind, and by kind and status class (`5.1`, `4.2`, …).
    func feedbackCounts(campaign id: Int64) throws -> [FeedbackCount]
}
