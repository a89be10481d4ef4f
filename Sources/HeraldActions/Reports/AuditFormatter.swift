import Foundation
import HeraldCore

/// Renders audit rows one at a time (so exports stream): table, CSV or JSON lines.
public enum AuditFormatter {
    public enum Format: String, CaseIterable, Sendable { case table, csv, jsonl }

    /// The CSV columns, in order; also the keys of a JSON line (`AuditRow`'s, but for the account's `email`).
    static let columns = AuditRow.CodingKeys.allCases.filter { $0 != .email }.map(\.stringValue)

    /// Compact (one line per row), sorted keys, slashes unescaped: the `GET /admin/audit` body and `--format jsonl`.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// A cell a spreadsheet will not run: text starting with `=`, `+`, `-`, `@`, a tab or a CR (a formula to
    /// Excel and Sheets) gets a leading `'`. User agents, SMTP replies and bounce diagnostics come from outsiders.
    public static func inert(_ text: String) -> String {
        guard let first = text.utf8.first, [61, 43, 45, 64, 9, 13].contains(first) else { return text }
        return "'" + text
    }

    /// The header line, if the format has one.
    public static func header(_ format: Format) -> String? {
        switch format {
        case .csv: columns.joined(separator: ",")
        case .table: "ID  RECIPIENT  ACTION  CAMPAIGN  STATE  QUEUED  SENT  REPLY  FIRST CLICK  REDEEMED  WITH  EXPIRED  SUPERSEDED  FEEDBACK"
        case .jsonl: nil
        }
    }

    public static func line(_ row: AuditRow, _ format: Format) -> String {
        switch format {
        case .jsonl:
            var row = row
            row.email = nil
            let data = (try? encoder.encode(row)) ?? Data()
            return String(decoding: data, as: UTF8.self)
        case .csv:
            return fields(row).map { CSVLine.quote(inert($0 ?? "")) }.joined(separator: ",")
        case .table:
            let reply = String((row.smtpReply ?? "-").prefix(24))
            let feedback = String((row.feedback ?? "-").prefix(40))
            let cells: [String] = [
                "\(row.id)", row.recipient, row.action, row.campaign.map(String.init) ?? "-", row.state, row.queuedAt.iso8601,
                row.sentAt.map(\.iso8601) ?? "-", reply, row.firstClickAt.map(\.iso8601) ?? "-",
                row.redeemedAt.map(\.iso8601) ?? "-", row.redeemedWith ?? "-", row.expired ? "yes" : "no", row.superseded ? "yes" : "no", feedback,
            ]
            return cells.joined(separator: "  ")
        }
    }

    /// The row's values in `columns` order, as CSV writes them; nil is an empty cell.
    private static func fields(_ row: AuditRow) -> [String?] {
        [
            String(row.id), row.recipient, row.action, row.campaign.map(String.init), row.state, row.queuedAt.iso8601,
            row.sentAt.map(\.iso8601), row.smtpReply, row.firstClickAt.map(\.iso8601), row.redeemedAt.map(\.iso8601), row.redeemedIP,
            row.redeemedUserAgent, String(row.expired), String(row.superseded), row.feedbackAt.map(\.iso8601), row.feedback,
            row.redeemedWith,
        ]
    }
}

extension AuditFormatter {
    /// The columns of `herald audit --sign-ins`, in order; also the keys of its JSON lines.
    static let eventColumns = ["id", "at", "uid", "email", "kind", "providerId", "rawId", "ip", "userAgent"]

    public static func eventHeader(_ format: Format) -> String? {
        switch format {
        case .csv: eventColumns.joined(separator: ",")
        case .table: "ID  AT  UID  EMAIL  KIND  PROVIDER  RAW ID  IP"
        case .jsonl: nil
        }
    }

    public static func line(_ event: AccountEventRow, _ format: Format) -> String {
        let values: [String?] = [
            String(event.id), event.at.iso8601, event.uid, event.email, event.kind, event.providerId, event.rawId, event.ip, event.userAgent,
        ]
        switch format {
        case .jsonl:
            let object = Dictionary(uniqueKeysWithValues: zip(eventColumns, values.map { $0.map(JSONValue.string) ?? .null }))
            let data = (try? encoder.encode(object)) ?? Data()
            return String(decoding: data, as: UTF8.self)
        case .csv:
            return values.map { CSVLine.quote(inert($0 ?? "")) }.joined(separator: ",")
        case .table:
            return values.prefix(8).map { $0 ?? "-" }.joined(separator: "  ")
        }
    }
}
