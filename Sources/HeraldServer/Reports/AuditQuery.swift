import Foundation
import HeraldActions
import HeraldCore

/// `/admin/audit`'s query: `email`, `campaign`, `action`, `since`, `until` (ISO 8601) and `status`
/// (`redeemed`, `unredeemed` or `expired`), as `herald audit` takes them, and `format` (`jsonl`, the default,
/// or `csv`). Empty parameters (a console form's blank fields) mean "any".
struct AuditQuery: Decodable, Sendable {
    var email: String?
    var campaign: String?
    var action: String?
    var since: String?
    var until: String?
    var status: String?
    var format: String?

    /// - Throws: `INVALID_ARGUMENT` naming the format.
    func exportFormat() throws -> AuditFormatter.Format {
        switch nonEmpty(format) {
        case nil, "jsonl": .jsonl
        case "csv": .csv
        default: throw HeraldError(.invalidArgument, "format must be jsonl or csv")
        }
    }

    /// The filters as a query string (without `format`), for links that repeat them.
    var queryString: String {
        let pairs = [("email", email), ("campaign", campaign), ("action", action), ("since", since), ("until", until), ("status", status)]
        return pairs.compactMap { name, value in nonEmpty(value).map { "\(name)=\(ConsoleController.queryEscape($0))" } }
            .joined(separator: "&")
    }

    /// - Throws: `INVALID_EMAIL`, or `INVALID_ARGUMENT` naming the parameter.
    func filter() throws -> AuditFilter {
        var filter = AuditFilter()
        filter.email = try nonEmpty(email).map { try EmailAddress($0) }
        filter.campaign = try nonEmpty(campaign).map { text in
            guard let id = Int64(text) else { throw HeraldError(.invalidArgument, "campaign must be a number") }
            return id
        }
        filter.kind = try nonEmpty(action).map { text in
            guard let kind = ActionKind(rawValue: text) ?? ActionKind(mode: text) else {
                throw HeraldError(.invalidArgument, "unknown action \(text)")
            }
            return kind
        }
        filter.since = try Self.time(since, "since")
        filter.until = try Self.time(until, "until")
        filter.status = try nonEmpty(status).map { text in
            guard let status = AuditFilter.Status(rawValue: text) else {
                throw HeraldError(.invalidArgument, "status must be redeemed, unredeemed or expired")
            }
            return status
        }
        return filter
    }

    private static func time(_ text: String?, _ name: String) throws -> Date? {
        try nonEmpty(text).map { text in
            guard let date = try? Date(text, strategy: .iso8601) else {
                throw HeraldError(.invalidArgument, "\(name) must be ISO 8601")
            }
            return date
        }
    }
}
