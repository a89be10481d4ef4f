import Foundation
import HeraldCore
import HeraldMail
import HeraldStore

/// What one message delivered to a bounce address came to.
public enum BounceIngestResult: Sendable, Equatable {
    /// Recorded against its row(s): the report, and each row's outcome.
    case recorded(BounceReport, [FeedbackOutcome])
    /// Not a bounce or complaint Herald acts on (an auto-reply, a delay warning, a delivered notice).
    case ignored
    /// A bounce or complaint that names no outbox row of ours (no VERP address with a valid MAC, or the row is gone).
    case unmatched(BounceReport?)
}

extension FeedbackService {
    /// Reads one message delivered to a bounce address and records it against the outbox row it names.
    ///
    /// The row comes from the VERP address only (`bounces+<id>-<mac>@<bounces.domain>`): first the envelope
    /// recipients the MTA delivered to, then any such address inside the message (a complaint quotes the
    /// original's `Return-Path`); a forged or altered address fails its MAC. The content only classifies:
    /// hard, soft or complaint, with the remote server's diagnostic.
    /// - Throws: `INVALID_CONFIGURATION` when `bounces.domain` is not set; `UNAVAILABLE` when the ledger is.
    public func ingestBounce(_ message: [UInt8], recipients: [String], now: Date = Date()) throws -> BounceIngestResult {
        let verp = try bounceAddresses()
        var ids: [Int64] = []
        for recipient in recipients {
            if let id = verp.outboxID(in: recipient), !ids.contains(id) { ids.append(id) }
        }
        if ids.isEmpty { ids = verp.outboxIDs(in: message) }
        return try record(BounceParser.parse(message), for: ids, now: now)
    }

    /// An LMTP delivery: one result per envelope recipient, the message read once. A recipient that is a VERP
    /// address of ours names its row; the others share the rows named inside the message, recorded once.
    public func ingestBounce(_ message: [UInt8], eachOf recipients: [String], now: Date = Date()) -> [Result<
        BounceIngestResult, any Error
    >] {
        let verp: VERPAddress
        do {
            verp = try bounceAddresses()
        } catch {
            return recipients.map { _ in .failure(error) }
        }
        let report = BounceParser.parse(message)
        var inside: Result<BounceIngestResult, any Error>?
        return recipients.map { recipient in
            if let id = verp.outboxID(in: recipient) { return Result { try record(report, for: [id], now: now) } }
            if let inside { return inside }
            let result = Result { try record(report, for: verp.outboxIDs(in: message), now: now) }
            inside = result
            return result
        }
    }

    /// - Throws: `INVALID_CONFIGURATION` when `bounces.domain` is not set.
    private func bounceAddresses() throws -> VERPAddress {
        guard let verp else {
            throw HeraldError(.invalidConfiguration, "bounces.domain is not set: Herald sends no VERP addresses, so no bounce names its row")
        }
        return verp
    }

    /// Records a report against the rows it names (at most 100).
    private func record(_ report: BounceReport?, for ids: [Int64], now: Date) throws -> BounceIngestResult {
        guard let report else { return .ignored }
        guard !ids.isEmpty else { return .unmatched(report) }
        var outcomes: [FeedbackOutcome] = []
        for id in ids.prefix(100) {
            let feedback = MailFeedback(outboxID: id, kind: feedbackKind(report.kind), status: report.status, diagnostic: report.diagnostic)
            let outcome = try store.recordFeedback(
                feedback, softLimit: bounces.softLimit, softWindow: bounces.softWindow, now: now)
            if let outcome {
                outcomes.append(outcome)
                logger.info(
                    "\(report.kind.rawValue) \(report.format.rawValue) for outbox \(id): \(outcome.state.rawValue)",
                    metadata: [
                        "outbox": "\(id)", "kind": "\(report.kind.rawValue)", "state": "\(outcome.state.rawValue)",
                        "status": "\(report.status ?? "-")", "suppressed": "\(outcome.suppressed?.reason.rawValue ?? "no")",
                    ])
            }
        }
        return outcomes.isEmpty ? .unmatched(report) : .recorded(report, outcomes)
    }

    private func feedbackKind(_ kind: BounceReport.Kind) -> MailFeedback.Kind {
        switch kind {
        case .hard: .hard
        case .soft: .soft
        case .complaint: .complaint
        }
    }

    /// The campaign email a one-click unsubscribe token names, for the confirm page (no change).
    /// - Throws: `INVALID_ARGUMENT` for a token that is malformed, forged, or names no campaign email.
    public func unsubscribeTarget(token: String) throws -> (email: String, locale: String, campaign: Campaign) {
        guard let id = unsubscribeTokens?.outboxID(in: token), let target = try store.unsubscribeTarget(outboxID: id) else {
            throw HeraldError(.invalidArgument, "this unsubscribe link is not valid")
        }
        return target
    }

    /// A one-click unsubscribe (RFC 8058 POST, or the confirm page's button): the address stops getting campaign
    /// mail; password resets and sign-in links still go. Unsubscribing twice is the same as once.
    /// - Throws: `INVALID_ARGUMENT` for a token that is malformed, forged, or names no campaign email.
    @discardableResult
    public func unsubscribe(token: String, now: Date = Date()) throws -> String {
        guard let id = unsubscribeTokens?.outboxID(in: token), let outcome = try store.recordUnsubscribe(outboxID: id, now: now) else {
            throw HeraldError(.invalidArgument, "this unsubscribe link is not valid")
        }
        logger.info("one-click unsubscribe", metadata: ["outbox": "\(id)"])
        return outcome.recipient
    }
}
