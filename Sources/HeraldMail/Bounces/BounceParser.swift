import Foundation

/// Reads what comes back to a VERP address: an RFC 3464 delivery status notification, an RFC 5965 feedback
/// report, or a bounce in neither format (`BounceHeuristics`), as a hard or soft bounce or a complaint.
///
/// ```swift
/// if let report = BounceParser.parse(bytes), let outboxID = verp.outboxIDs(in: bytes).first {
///     // record `report.kind` against the row
/// }
/// ```
public enum BounceParser {
    /// What a message delivered to a bounce address reports, or nil when it is nothing Herald acts on:
    /// auto-replies (Auto-Submitted: auto-replied, vacation/out-of-office subjects, Precedence: auto_reply without
    /// failure text), DSNs whose recipients are only delayed/delivered/relayed/expanded, ARF Feedback-Type not-spam,
    /// and messages with no failure signal at all.
    public static func parse(_ message: [UInt8]) -> BounceReport? {
        let root = MIMEPart(message: message)
        if let (report, part) = reportPart(in: root, reportType: "feedback-report", types: ["message/feedback-report"]) {
            return complaint(part, report: report)
        }
        let statusTypes: Set = ["message/delivery-status", "message/global-delivery-status"]
        if let (_, part) = reportPart(in: root, reportType: "delivery-status", types: statusTypes) {
            switch deliveryStatus(part, message: root) {
            case .failed(let report): return report
            case .nothingFailed: return nil
            case .unreadable: break
            }
        }
        return BounceHeuristics.report(root)
    }

    /// The multipart holding a part of one of `types`, and that part; or else a `multipart/report` of
    /// `reportType` and its second part, where the report belongs. Carried messages are not searched: a
    /// returned message is not the report.
    static func reportPart(in root: MIMEPart, reportType: String, types: Set<String>) -> (MIMEPart, MIMEPart)? {
        if types.contains(root.contentType.mediaType) { return (root, root) }
        if let report = root.firstPart(where: { $0.parts.contains { types.contains($0.contentType.mediaType) } }),
            let part = report.parts.first(where: { types.contains($0.contentType.mediaType) })
        {
            return (report, part)
        }
        let report = root.firstPart {
            $0.contentType.mediaType == "multipart/report" && $0.contentType.parameters["report-type"]?.lowercased() == reportType
        }
        guard let report, report.parts.count > 1 else { return nil }
        return (report, report.parts[1])
    }

    /// An ARF report (RFC 5965 §3.1): a complaint when its Feedback-Type is `abuse` (or missing); the other types
    /// (`auth-failure` DMARC reports, `fraud`, `virus`, `other`, `not-spam`) say nothing against the recipient's
    /// wish for mail and are ignored. The recipient is Original-Rcpt-To, else the To of the returned message.
    static func complaint(_ part: MIMEPart, report: MIMEPart) -> BounceReport? {
        let fields = HeaderFields.groups(part.decodedBody[...]).flatMap { $0 }
        let type = fields[field: "feedback-type"]?.lowercased().split(whereSeparator: \.isWhitespace).first.map(String.init)
        guard type == nil || type == "abuse" else { return nil }
        let returned = report.parts.lazy.compactMap(\.embedded).first
        let recipient =
            fields[field: "original-rcpt-to"].flatMap(BounceText.recipient(inField:))
            ?? returned?.field("to").flatMap { BounceText.addresses(in: $0).first }
        var diagnostic = "Feedback-Type: \(type ?? "missing")"
        if let agent = fields[field: "user-agent"] { diagnostic += "; User-Agent: \(agent)" }
        return BounceReport(kind: .complaint, format: .arf, recipient: recipient, diagnostic: diagnostic)
    }

    enum DeliveryStatus {
        case failed(BounceReport)
        /// Every recipient was delayed, delivered, relayed or expanded.
        case nothingFailed
        /// No recipient group with an Action: not a DSN to go by.
        case unreadable
    }

    /// A DSN's verdict from its first recipient group with `Action: failed` (or, lacking an Action, a 5.x.x
    /// Status): soft for 4.x.x and full mailboxes, hard otherwise.
    static func deliveryStatus(_ part: MIMEPart, message: MIMEPart) -> DeliveryStatus {
        let groups = HeaderFields.groups(part.decodedBody[...]).filter {
            $0[field: "action"] != nil || $0[field: "final-recipient"] != nil || $0[field: "original-recipient"] != nil
        }
        func action(_ group: [HeaderFields.Field]) -> String? {
            group[field: "action"]?.lowercased().split { $0.isWhitespace || $0 == "(" }.first.map(String.init)
        }
        let failed =
            groups.first { action($0) == "failed" }
            ?? groups.first { action($0) == nil && BounceText.enhancedStatus(in: $0[field: "status"] ?? "")?.hasPrefix("5.") == true }
        guard let failed else {
            let unfailed: Set = ["delayed", "delivered", "relayed", "expanded"]
            return groups.contains { action($0).map(unfailed.contains) == true } ? .nothingFailed : .unreadable
        }
        let diagnosticCode = failed[field: "diagnostic-code"].map(BounceText.withoutType).flatMap {
            $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0
        }
        let status = BounceText.enhancedStatus(in: failed[field: "status"] ?? "") ?? diagnosticCode.flatMap(BounceText.enhancedStatus)
        let smtpCode = diagnosticCode.flatMap(BounceText.smtpCode)
        let kind =
            status.flatMap { BounceText.kind(status: $0, context: diagnosticCode ?? "") }
            ?? smtpCode.map { BounceText.kind(smtpCode: $0, context: diagnosticCode ?? "") } ?? .soft
        let recipient =
            (failed[field: "final-recipient"] ?? failed[field: "original-recipient"]).flatMap(BounceText.recipient(inField:))
            ?? message.field("x-failed-recipients").flatMap { BounceText.addresses(in: $0).first }
        let diagnostic =
            diagnosticCode ?? "Status: \(failed[field: "status"] ?? "none"), Action: \(failed[field: "action"] ?? "none")"
        return .failed(BounceReport(kind: kind, format: .dsn, status: status, recipient: recipient, diagnostic: diagnostic))
    }
}
