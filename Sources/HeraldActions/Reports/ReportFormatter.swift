import Foundation
import HeraldCore
import HeraldMail

/// Renders a `CampaignReport` as text, JSON or a standalone HTML page with an SVG chart (no JavaScript).
public enum ReportFormatter {
    public static func text(_ report: CampaignReport) -> String {
        var lines = [
            "campaign \(report.campaign.id) \"\(report.campaign.name)\" (\(report.campaign.kind.rawValue)): \(report.status.rawValue)",
            "rows: \(report.total)  rejected at import: \(report.campaign.rejected)",
            "",
        ]
        let stateWidth = OutboxState.allCases.map(\.rawValue.count).reduce(12, max)
        lines.append("state".padding(toLength: stateWidth, withPad: " ", startingAt: 0) + " count")
        for state in OutboxState.allCases {
            lines.append(state.rawValue.padding(toLength: stateWidth, withPad: " ", startingAt: 0) + " \(report.counts[state] ?? 0)")
        }
        lines += ["", "SMTP reply   count"]
        for (code, count) in report.replyCodes.sorted(by: { $0.key < $1.key }) {
            lines.append(code.padding(toLength: 12, withPad: " ", startingAt: 0) + " \(count)")
        }
        lines += [
            "", "sent \(report.sent)  clicked \(report.clicked)  redeemed \(report.redeemed)  redemption rate \(percent(report.redemptionRate))",
        ]
        lines.append(
            "bounced \(report.bounced) (\(percent(report.bounceRate)))  complained \(report.complained) (\(percent(report.complaintRate)))")
        if !report.feedback.isEmpty {
            lines += ["", "feedback     status  count"]
            for item in report.feedback {
                let kind = item.kind.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
                lines.append("\(kind) \((item.statusClass ?? "-").padding(toLength: 6, withPad: " ", startingAt: 0)) \(item.count)")
            }
        }
        if let t = report.timeToRedeem {
            lines.append("time to redeem: p50 \(duration(t.p50))  p90 \(duration(t.p90))  p99 \(duration(t.p99))")
        }
        if !report.funnel.isEmpty {
            lines += ["", "funnel (per \(duration(Double(report.bucketSeconds)))):", "start                 sent  redeemed"]
            for bucket in report.funnel {
                lines.append("\(bucket.start.iso8601)  \(String(bucket.sent).leftPad(6))  \(String(bucket.redeemed).leftPad(8))")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// A complete HTML page: summary tables and an SVG bar chart of sent and redeemed per time bucket.
    public static func html(_ report: CampaignReport) -> String {
        let c = report.campaign
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Campaign \(c.id): \(escape(c.name))</title>
            <style>
            body{font-family:-apple-system,'Segoe UI',Roboto,Arial,sans-serif;margin:24px;color:#1f2937;background:#f9fafb}
            h1{font-size:22px;margin:0 0 4px}
            \(htmlStyle)
            </style></head><body>
            <h1>Campaign \(c.id): \(escape(c.name))</h1>
            \(htmlBody(report))
            </body></html>
            """
    }

    /// The report's styles beyond a page's own, for a page that shows `htmlBody` (the console's layout).
    public static let htmlStyle = """
        .meta{color:#6b7280;margin:0 0 20px}
        .cards{display:flex;gap:12px;flex-wrap:wrap;margin-bottom:20px}
        .card{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:12px 16px;min-width:120px}
        .card b{display:block;font-size:22px} table{border-collapse:collapse;background:#fff;margin:0 24px 20px 0;display:inline-table}
        td,th{border:1px solid #e5e7eb;padding:4px 10px;text-align:start} svg{background:#fff;border:1px solid #e5e7eb;border-radius:8px;max-width:100%;height:auto}
        """

    /// The report without a page around it: the summary line, the cards, the chart and the tables.
    public static func htmlBody(_ report: CampaignReport) -> String {
        let c = report.campaign
        let stateRows = OutboxState.allCases.map { "<tr><td>\($0.rawValue)</td><td>\(report.counts[$0] ?? 0)</td></tr>" }.joined()
        let codeRows = report.replyCodes.sorted { $0.key < $1.key }.map { "<tr><td>\(escape($0.key))</td><td>\($0.value)</td></tr>" }.joined()
        let feedbackRows = report.feedback.map {
            "<tr><td>\($0.kind.rawValue)</td><td>\(escape($0.statusClass ?? "-"))</td><td>\($0.count)</td></tr>"
        }.joined()
        let timing =
            report.timeToRedeem.map {
                "<p>Time to redeem: p50 \(duration($0.p50)), p90 \(duration($0.p90)), p99 \(duration($0.p99))</p>"
            } ?? "<p>No redemptions yet.</p>"
        return """
            <p class="meta">\(c.kind.rawValue) · <span class="status">\(report.status.rawValue)</span>\(report.status == .scheduled ? " · starts \(c.startAt.iso8601)" : "") · \(report.total) recipients · \(c.rejected) rejected at import\(c.rate.map { " · \(format($0))/s" } ?? "")</p>
            <div class="cards">
            <div class="card">Sent<b>\(report.sent)</b></div><div class="card">Clicked<b>\(report.clicked)</b></div>
            <div class="card">Redeemed<b>\(report.redeemed)</b></div><div class="card">Redemption rate<b>\(percent(report.redemptionRate))</b></div>
            <div class="card">Bounce rate<b>\(percent(report.bounceRate))</b></div><div class="card">Complaint rate<b>\(percent(report.complaintRate))</b></div>
            </div>
            \(chart(report))
            \(timing)
            <table><tr><th>State</th><th>Rows</th></tr>\(stateRows)</table>
            <table><tr><th>SMTP reply</th><th>Rows</th></tr>\(codeRows)</table>
            <table><tr><th>Feedback</th><th>Status</th><th>Rows</th></tr>\(feedbackRows)</table>
            """
    }

    /// Grouped bars (sent, redeemed) per bucket with axes and a legend.
    static func chart(_ report: CampaignReport) -> String {
        let width = 760.0
        let height = 260.0
        let left = 48.0
        let bottom = 36.0
        let top = 24.0
        let buckets = report.funnel
        let peak = max(1, buckets.map { max($0.sent, $0.redeemed) }.max() ?? 1)
        let plotWidth = width - left - 12
        let plotHeight = height - top - bottom
        let slot = buckets.isEmpty ? plotWidth : plotWidth / Double(buckets.count)
        var parts: [String] = [
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"Sent and redeemed over time\">",
            "<title>Sent and redeemed over time</title>",
            "<line x1=\"\(left)\" y1=\"\(top + plotHeight)\" x2=\"\(width - 12)\" y2=\"\(top + plotHeight)\" stroke=\"#9ca3af\"/>",
            "<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(top + plotHeight)\" stroke=\"#9ca3af\"/>",
            "<text x=\"\(left - 6)\" y=\"\(top + 4)\" font-size=\"11\" text-anchor=\"end\" fill=\"#6b7280\">\(peak)</text>",
            "<text x=\"\(left - 6)\" y=\"\(top + plotHeight)\" font-size=\"11\" text-anchor=\"end\" fill=\"#6b7280\">0</text>",
            "<rect x=\"\(left + 8)\" y=\"6\" width=\"10\" height=\"10\" fill=\"#2563eb\"/><text x=\"\(left + 22)\" y=\"15\" font-size=\"12\">sent</text>",
            "<rect x=\"\(left + 70)\" y=\"6\" width=\"10\" height=\"10\" fill=\"#16a34a\"/><text x=\"\(left + 84)\" y=\"15\" font-size=\"12\">redeemed</text>",
        ]
        if buckets.isEmpty {
            parts.append("<text x=\"\(width / 2)\" y=\"\(top + plotHeight / 2)\" text-anchor=\"middle\" fill=\"#6b7280\">nothing sent yet</text>")
        }
        for (index, bucket) in buckets.enumerated() {
            let x = left + Double(index) * slot
            let bar = max(1, slot / 2 - 2)
            for (offset, value, colour) in [(1.0, bucket.sent, "#2563eb"), (bar + 1, bucket.redeemed, "#16a34a")] {
                let h = plotHeight * Double(value) / Double(peak)
                parts.append(
                    "<rect x=\(quote(x + offset)) y=\(quote(top + plotHeight - h)) width=\(quote(bar)) height=\(quote(h)) fill=\"\(colour)\"><title>\(bucket.start.iso8601): \(value)</title></rect>"
                )
            }
            if index == 0 || index == buckets.count - 1 || (buckets.count > 6 && index % (buckets.count / 4) == 0) {
                parts.append(
                    "<text x=\(quote(x + 1)) y=\(quote(height - 14)) font-size=\"10\" fill=\"#6b7280\">\(shortTime(bucket.start))</text>")
            }
        }
        parts.append("</svg>")
        return parts.joined(separator: "\n")
    }

    static func shortTime(_ date: Date) -> String {
        let text = date.iso8601
        return String(text.dropFirst(11).prefix(5))
    }

    static func percent(_ value: Double) -> String { String(format: "%.1f%%", value * 100) }

    static func format(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value) }

    static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return String(format: "%.1fs", seconds) }
        if seconds < 3600 { return String(format: "%.1fm", seconds / 60) }
        return String(format: "%.1fh", seconds / 3600)
    }

    private static func quote(_ value: Double) -> String { "\"\(String(format: "%.1f", value))\"" }

    static func escape(_ text: String) -> String { HTMLText.escape(text) }
}

extension String {
    fileprivate func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
