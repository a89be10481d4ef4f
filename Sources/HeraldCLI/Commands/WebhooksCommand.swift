import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore

/// `herald webhooks`: what each endpoint has been told, a test POST, and replays.
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "List webhook endpoints and their deliveries, post a test event, or replay deliveries.",
        discussion: """
            Events (sent, failed, dead, possibly-delivered, bounced, clicked, redeemed, expired) are written to the ledger in the same \
            transaction as the change they report, and posted by `herald worker` (and `herald serve`'s embedded worker), \
            signed with Herald-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.
            """,
        subcommands: [ListWebhooks.self, TestWebhook.self, ReplayWebhooks.self], defaultSubcommand: ListWebhooks.self)
}

/// `herald webhooks [list]`: one line per endpoint.
struct ListWebhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Print each endpoint: URL, events, deliveries queued, delivered and dead, the last error.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions

    static let columns: [RowWriter.Column] = [
        .init("ENDPOINT", key: "endpoint"), .init("URL", key: "url"), .init("EVENTS", key: "events"), .init("QUEUED", key: "queued"),
        .init("DELIVERED", key: "delivered"), .init("DEAD", key: "dead"), .init("OLDEST QUEUED", key: "oldestQueuedAt"),
        .init("LAST DELIVERED", key: "lastDeliveredAt"), .init("LAST ERROR", key: "lastError"), .init("LAST ERROR AT", key: "lastErrorAt"),
    ]

    func run() async throws {
        try await reportingErrors {
            let format = try output.resolved()
            let reports = try await Runtime.load(global).actions().webhooks.webhookReports()
            guard format == .table else {
                // The table below is a block per endpoint; the machine formats are a row per endpoint.
                let writer = RowWriter(format: format, columns: Self.columns)
                for report in reports {
                    let json = WebhookJSON(report)
                    let cells: [String?] = [
                        json.endpoint, json.url, json.events.joined(separator: " "), "\(json.queued)", "\(json.delivered)", "\(json.dead)",
                        json.oldestQueuedAt, json.lastDeliveredAt, json.lastError, json.lastErrorAt,
                    ]
                    try writer.write(cells, json: json)
                }
                return writer.finish()
            }
            if reports.isEmpty { return print("(no webhook endpoints configured)") }
            for report in reports {
                let events = report.events.count == WebhookEvent.allCases.count ? "all events" : report.events.joined(separator: ",")
                print("\(report.endpoint)  \(report.url ?? "(not configured: nothing posts its deliveries)")  \(events)")
                var counts = "  queued \(report.queued)  delivered \(report.delivered)  dead \(report.dead)"
                if let oldest = report.oldestQueuedAt { counts += "  oldest queued \(oldest.iso8601)" }
                if let last = report.lastDeliveredAt { counts += "  last delivered \(last.iso8601)" }
                print(counts)
                if let error = report.lastError { print("  last error \(report.lastErrorAt.map(\.iso8601) ?? "-"): \(error)") }
            }
        }
    }
}

/// `herald webhooks test NAME`: a signed `test` event, now.
struct TestWebhook: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test", abstract: "POST a signed test event to an endpoint now and print its HTTP status; exit 1 unless 2xx.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The endpoint's name (webhooks.<name>).") var name: String

    func run() async throws {
        try await reportingErrors {
            let answer = try await Runtime.load(global).actions().webhooks.testWebhook(named: name)
            print("\(name): HTTP \(answer.status)\(answer.excerpt.isEmpty ? "" : " \(answer.excerpt)")")
            if !answer.isSuccess { throw ExitCode.failure }
        }
    }
}

/// `herald webhooks replay`: deliveries queued again with a fresh attempt budget.
struct ReplayWebhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Queue deliveries again (dead ones by default) with a fresh attempt budget; the worker posts them.",
        discussion: "Receivers see the same event id again (Herald-Event-Id) and can de-duplicate on it.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "Only this endpoint's deliveries.") var endpoint: String?
    @Option(help: "Only deliveries in this state: queued, delivered or dead (default dead; 'any' for all).") var state = "dead"
    @Option(help: "Only events created at or after this time: ISO 8601, now, or how long ago (90s, 10m, 1h, 2d).")
    var since: String?
    @Option(help: "Only this delivery (its id: Herald-Delivery-Id).") var id: Int64?

    func run() async throws {
        try await reportingErrors {
            var filter = WebhookReplayFilter(endpoint: endpoint, id: id)
            if state != "any" {
                guard let parsed = WebhookDeliveryState(rawValue: state) else {
                    throw HeraldError(.argumentError, "unknown state '\(state)'; expected queued, delivered, dead or any")
                }
                filter.state = parsed
            }
            if let since { filter.since = try TimeArgument.past(since, option: "--since") }
            let count = try await Runtime.load(global).actions().webhooks.replayWebhooks(filter)
            print("\(count) deliver\(count == 1 ? "y" : "ies") queued again")
        }
    }
}

/// One endpoint in `herald webhooks list --json`, times as ISO 8601.
struct WebhookJSON: Encodable {
    let endpoint: String
    let url: String?
    let events: [String]
    let queued: Int
    let delivered: Int
    let dead: Int
    let oldestQueuedAt: String?
    let lastDeliveredAt: String?
    let lastError: String?
    let lastErrorAt: String?

    init(_ report: WebhookEndpointReport) {
        endpoint = report.endpoint
        url = report.url
        events = report.events
        queued = report.queued
        delivered = report.delivered
        dead = report.dead
        oldestQueuedAt = report.oldestQueuedAt?.iso8601
        lastDeliveredAt = report.lastDeliveredAt?.iso8601
        lastError = report.lastError
        lastErrorAt = report.lastErrorAt?.iso8601
    }
}
