import Foundation
import HeraldCore
import HeraldStore

extension FeedbackService {
    /// One page of the suppression list, in address order after `after`.
    public func suppressions(reason: Suppression.Reason? = nil, after: String? = nil, limit: Int = 1000) throws -> [Suppression] {
        try store.listSuppressions(reason: reason, after: after?.lowercased(), limit: max(1, min(limit, 10_000)))
    }

    /// One page of the suppression list newest first, after `after` (the previous page's last entry).
    public func recentSuppressions(reason: Suppression.Reason? = nil, after: SuppressionCursor? = nil, limit: Int = 100) throws
        -> [Suppression]
    {
        try store.recentSuppressions(reason: reason, after: after, limit: max(1, min(limit, 10_000)))
    }

    /// The suppression of one address, if any.
    public func suppression(email: String) throws -> Suppression? {
        let address = try EmailAddress(email).value
        return try store.suppressions(emails: [address])[address]
    }

    /// Puts addresses on the list (validated first: one bad address and nothing is added); returns how many were
    /// added or widened. An unsubscribe stops campaigns, any other reason all mail, unless `scope` says otherwise.
    /// - Throws: `INVALID_EMAIL` naming the address.
    @discardableResult
    public func suppress(
        emails: [String], reason: Suppression.Reason = .manual, scope: Suppression.Scope? = nil, detail: String? = nil, now: Date = Date()
    ) throws -> Int {
        let entries = try emails.map { email in
            do {
                return Suppression(
                    email: try EmailAddress(email).value, reason: reason, scope: scope, detail: detail.map { String($0.prefix(1000)) },
                    createdAt: now)
            } catch {
                throw HeraldError(.invalidEmail, "'\(email)' is not an email address")
            }
        }
        return try store.suppress(entries, now: now)
    }

    /// Puts parsed entries on the list (`SuppressionCSV.parse`), in one transaction per 1,000; returns how many
    /// were added or widened.
    @discardableResult
    public func suppress(_ entries: [SuppressionCSV.Entry], now: Date = Date()) throws -> Int {
        var added = 0
        for start in stride(from: 0, to: entries.count, by: 1000) {
            let batch = entries[start..<min(start + 1000, entries.count)].map { entry in
                Suppression(
                    email: entry.email, reason: entry.reason, scope: entry.scope, detail: entry.detail.map { String($0.prefix(1000)) },
                    createdAt: now)
            }
            added += try store.suppress(batch, now: now)
        }
        return added
    }

    /// Takes an address off the list; false when it was not on it.
    public func unsuppress(email: String) throws -> Bool {
        try store.unsuppress(email: try EmailAddress(email).value)
    }
}
