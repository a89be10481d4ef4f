import Foundation
import HeraldCore

extension ReportFormatter {
    /// `herald campaign report --format json`: pretty-printed, sorted keys.
    public static func json(_ report: CampaignReport) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(JSONReport(report: report))) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// A report's JSON shape: every key present, `null` for a campaign without a rate and for no redemptions yet.
    struct JSONReport: Encodable {
        enum CodingKeys: String, CodingKey {
            case campaign, counts, replyCodes, total, sent, clicked, redeemed, redemptionRate, bucketSeconds, funnel, timeToRedeem
            case bounced, complained, bounceRate, complaintRate, feedback
        }

        struct Feedback: Encodable {
            let kind: String
            let statusClass: String?
            let count: Int
        }

        enum CampaignKeys: String, CodingKey { case id, name, action, state, rate, rejected }

        struct Bucket: Encodable {
            let start: String
            let sent: Int
            let redeemed: Int
        }

        struct Percentiles: Encodable {
            let p50: Double
            let p90: Double
            let p99: Double
        }

        let report: CampaignReport

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            var campaign = container.nestedContainer(keyedBy: CampaignKeys.self, forKey: .campaign)
            try campaign.encode(report.campaign.id, forKey: .id)
            try campaign.encode(report.campaign.name, forKey: .name)
            try campaign.encode(report.campaign.kind.rawValue, forKey: .action)
            try campaign.encode(report.status.rawValue, forKey: .state)
            try campaign.encode(report.campaign.rate, forKey: .rate)
            try campaign.encode(report.campaign.rejected, forKey: .rejected)
            let counts = Dictionary(uniqueKeysWithValues: OutboxState.allCases.map { ($0.rawValue, report.counts[$0] ?? 0) })
            try container.encode(counts, forKey: .counts)
            try container.encode(report.replyCodes, forKey: .replyCodes)
            try container.encode(report.total, forKey: .total)
            try container.encode(report.sent, forKey: .sent)
            try container.encode(report.clicked, forKey: .clicked)
            try container.encode(report.redeemed, forKey: .redeemed)
            try container.encode(report.redemptionRate, forKey: .redemptionRate)
            try container.encode(report.bucketSeconds, forKey: .bucketSeconds)
            let funnel = report.funnel.map { Bucket(start: $0.start.iso8601, sent: $0.sent, redeemed: $0.redeemed) }
            try container.encode(funnel, forKey: .funnel)
            let timeToRedeem = report.timeToRedeem.map { Percentiles(p50: $0.p50, p90: $0.p90, p99: $0.p99) }
            try container.encode(timeToRedeem, forKey: .timeToRedeem)
            try container.encode(report.bounced, forKey: .bounced)
            try container.encode(report.complained, forKey: .complained)
            try container.encode(report.bounceRate, forKey: .bounceRate)
            try container.encode(report.complaintRate, forKey: .complaintRate)
            let feedback = report.feedback.map { Feedback(kind: $0.kind.rawValue, statusClass: $0.statusClass, count: $0.count) }
            try container.encode(feedback, forKey: .feedback)
        }
    }
}
