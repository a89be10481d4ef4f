import Foundation
import HeraldCore

/// Renders audit rows one at a time (so exports stream): table, CSV or JSON lines.
public enum AuditFormatter {
    public enum Format: String, CaseIterable, Sendable { case table, csv, jsonl }

    static let columns = [
        "id", "recipient", "action", "campaign", "state", "queuedAt", "sentAt", "smtpReply", "firstClickAt", "redeemedAt",
        "redeemedIp", "redeemedUserAgent", "expired", "superseded",
    ]

    /// The header line, if the format has one.
    public static func header(_ format: Format) -> String? {
        switch format {
        case .csv: columns.joined(separator: ",")
        case .table: "ID  RECIPIENT  ACTION  CAMPAIGN  STATE  QUEUED  SENT  REPLY  FIRST CLICK  REDEEMED  EXPIRED  SUPERSEDED"
        case .jsonl: nil
        }
    }

    public static func line(_ row: AuditRow, _ format: Format) -> String {
        let values = fields(row)
        switch format {
        case .jsonl:
            let object = Dictionary(uniqueKeysWithValues: zip(columns, values.map { $0 ?? NSNull() }))
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        case .csv:
            return values.map { value in
                let text = value.map { "\($0)" } ?? ""
                return text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" })
                    ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
            }.joined(separator: ",")
        case .table:
            return [
                "\(row.id)", row.recipient, row.action, row.campaign.map(String.init) ?? "-", row.state, row.queuedAt.iso8601,
                row.sentAt.map(\.iso8601) ?? "-", String((row.smtpReply ?? "-").prefix(24)), row.firstClickAt.map(\.iso8601) ?? "-",
                row.redeemedAt.map(\.iso8601) ?? "-", row.expired ? "yes" : "no", row.superseded ? "yes" : "no",
            ].joined(separator: "  ")
        }
    }

    private static func fields(_ row: AuditRow) -> [Any?] {
        [
            row.id, row.recipient, row.action, row.campaign, row.state, row.queuedAt.iso8601, row.sentAt.map(\.iso8601), row.smtpReply,
            row.firstClickAt.map(\.iso8601), row.redeemedAt.map(\.iso8601), row.redeemedIP, row.redeemedUserAgent, row.expired, row.superseded,
        ]
    }

}
