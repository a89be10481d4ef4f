import Foundation
import HeraldCore

/// `/admin/audit`'s query: `email`, `campaign`, `action`, `since`, `until` (ISO 8601) and `status`
/// (`redeemed`, `unredeemed` or `expired`), as `herald audit` takes them.
struct AuditQuery: Decodable, Sendable {
    var email: String?
    var campaign: String?
    var action: String?
    var since: String?
    var until: String?
    var status: String?

    /// - Throws: `INVALID_EMAIL`, or `INVALID_ARGUMENT` naming the parameter.
    func filter() throws -> AuditFilter {
        var filter = AuditFilter()
        filter.email = try email.map { try EmailAddress($0) }
        filter.campaign = try campaign.map { text in
            guard let id = Int64(text) else { throw HeraldError(.invalidArgument, "campaign must be a number") }
            return id
        }
        filter.kind = try action.map { text in
            guard let kind = ActionKind(rawValue: text) ?? ActionKind(mode: text) else {
                throw HeraldError(.invalidArgument, "unknown action \(text)")
            }
            return kind
        }
        filter.since = try Self.time(since, "since")
        filter.until = try Self.time(until, "until")
        filter.status = try status.map { text in
            guard let status = AuditFilter.Status(rawValue: text) else {
                throw HeraldError(.invalidArgument, "status must be redeemed, unredeemed or expired")
            }
            return status
        }
        return filter
    }

    private static func time(_ text: String?, _ name: String) throws -> Date? {
        try text.map { text in
            guard let date = try? Date(text, strategy: .iso8601) else {
                throw HeraldError(.invalidArgument, "\(name) must be ISO 8601")
            }
            return date
        }
    }
}
