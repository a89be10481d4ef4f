import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore
import HeraldInbound
import HeraldMail
import Logging
import ServiceLifecycle

/// `herald bounces`: bounces and complaints back to their outbox rows.
struct BouncesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bounces",
        abstract: "Take in bounces and complaints: one on standard input, or as an LMTP/SMTP listener.",
        discussion: """
            Mail leaves with the envelope sender <bounces.localPart>+<outbox id>-<mac>@<bounces.domain>; route that \
            domain to `herald bounces listen` (Postfix: transport_maps "bounces.example.com lmtp:inet:127.0.0.1:2424") or \
            to a pipe running `herald bounces ingest --recipient ${original_recipient}`. A hard bounce or a complaint \
            marks the row and suppresses the address; soft bounces suppress it after bounces.softLimit within \
            bounces.softWindow.
            """,
        subcommands: [IngestBounce.self, ListenForBounces.self])
}

/// `herald bounces ingest`: one message on standard input, for an MTA's pipe transport or a Maildir loop.
///
/// Exit status: 0 when the message was recorded, ignored (an auto-reply) or matched no row (all are consumed);
/// 75 (EX_TEMPFAIL: the MTA keeps the message and retries) for anything else — an unavailable ledger, a missing
/// mail key, bad configuration — so no bounce is lost to a double bounce while the operator fixes it.
struct IngestBounce: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest", abstract: "Record one bounce or complaint read from standard input.")

    @OptionGroup var global: GlobalOptions
    @Option(name: .customLong("recipient"), help: "The envelope recipient the MTA delivered to (repeatable).")
    var recipients: [String] = []

    static let maximumMessage = 10 << 20

    func run() async throws {
        let message = FileHandle.standardInput.readData(ofLength: Self.maximumMessage + 1)
        do {
            let runtime = try await Runtime.load(global)
            let feedback = try runtime.actions(creatingMailKey: false).feedback
            let result = try feedback.ingestBounce(Array(message.prefix(Self.maximumMessage)), recipients: recipients)
            print(IngestSummary.line(result))
        } catch {
            let line = "\(error)".split(whereSeparator: \.isNewline).joined(separator: " ")
            FileHandle.standardError.write(Data("error: \(line) (exit 75: the MTA keeps the message and tries again)\n".utf8))
            throw ExitCode(75)
        }
    }
}

/// `herald bounces listen`: an LMTP (or SMTP) server the MTA delivers bounces to.
struct ListenForBounces: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Receive bounces and complaints over LMTP or SMTP (bounces.listenHost, listenPort, dialect).",
        discussion: """
            Prints 'READY lmtp://host:port' once listening. Every message is answered 250 once recorded, ignored or \
            found to match no row, so bounces are never bounced; 451 (try again) while the ledger is unavailable. \
            SIGINT/SIGTERM stop it gracefully.
            """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            let configuration = runtime.configuration
            guard !configuration.bounces.domain.isEmpty else {
                throw HeraldError(.invalidConfiguration, "bounces.domain is not set: Herald sends no VERP addresses, so no bounce names its row")
            }
            _ = try await runtime.openStoreWaiting()
            let feedback = try runtime.actions().feedback
            let logger = runtime.logger
            let bounces = configuration.bounces
            guard let dialect = MailListener.Dialect(rawValue: bounces.dialect) else {
                throw HeraldError(.invalidConfiguration, "bounces.dialect: expected lmtp or smtp")
            }
            let listener = MailListener(
                host: bounces.listenHost, port: bounces.listenPort, dialect: dialect, hostname: bounces.domain, logger: logger,
                onBound: { port in
                    FileHandle.standardOutput.write(Data("READY \(bounces.dialect)://\(bounces.listenHost):\(port)\n".utf8))
                },
                deliver: { delivery in await Self.deliver(delivery, feedback: feedback, logger: runtime.logger) })
            let group = ServiceGroup(
                configuration: .init(
                    services: [.init(service: listener, serviceName: "bounces")], gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger))
            try await listening("bounces.listenPort", host: bounces.listenHost, port: bounces.listenPort) { try await group.run() }
        }
    }

    /// Records one message for each of its recipients, read once: LMTP answers per recipient.
    static func deliver(_ delivery: MailListener.Delivery, feedback: FeedbackService, logger: Logger) async -> [MailListener.Outcome] {
        let results: [Result<BounceIngestResult, any Error>]
        do {
            results = try await offload { feedback.ingestBounce(delivery.data, eachOf: delivery.recipients) }
        } catch {
            return delivery.recipients.map { _ in .deferred("4.3.0 could not record the message") }
        }
        return results.map { result in
            switch result {
            case .success(let ingested):
                if case .unmatched = ingested {
                    logger.warning(
                        "a bounce named no outbox row of ours (no VERP address with a valid MAC: is tokens.mailKeyFile the senders'?)")
                } else {
                    logger.debug("\(IngestSummary.line(ingested))")
                }
                return .accepted
            case .failure(let error as HeraldError) where error.code == .unavailable:
                return .deferred("4.3.0 the ledger is unavailable; try again later")
            case .failure(let error):
                logger.error("could not record a bounce", metadata: ["error": "\(error)"])
                return .deferred("4.3.0 could not record the message")
            }
        }
    }
}

/// One line saying what a message came to.
enum IngestSummary {
    static func line(_ result: BounceIngestResult) -> String {
        switch result {
        case .recorded(let report, let outcomes):
            let rows = outcomes.map { outcome in
                "\(outcome.state.rawValue)\(outcome.suppressed.map { ", suppressed (\($0.reason.rawValue))" } ?? "")"
            }
            return "recorded \(report.kind.rawValue) \(report.format.rawValue) \(report.status ?? "-"): \(rows.joined(separator: "; "))"
        case .ignored:
            return "ignored: not a bounce or complaint (an auto-reply, a delay warning or a delivery notice)"
        case .unmatched(let report):
            return "unmatched: \(report.map { "a \($0.kind.rawValue) \($0.format.rawValue)" } ?? "a message") naming no outbox row of ours"
        }
    }
}
