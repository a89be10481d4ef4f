import Foundation
import HeraldCore
import HeraldMail
import HeraldStore

/// A campaign to create (or whose import to resume): one action to many recipients.
public struct CampaignRequest: Sendable {
    public enum Source: Sendable, Hashable {
        /// A CSV file with a header row (`email`, optional `display_name`, `locale`, other columns as variables).
        case csv(path: String)
        /// The account store (optionally only unverified addresses).
        case accounts(unverifiedOnly: Bool)
    }

    public var name: String
    public var kind: ActionKind
    public var source: Source
    public var continueURL: String?
    /// Messages per second; nil sends as fast as the worker goes.
    public var rate: Double?
    public var startAt: Date
    public var linkLifetime: TimeInterval?
    /// Where refused rows go; defaults to `<recipients>.rejects.csv` or `campaign-<id>.rejects.csv`.
    public var rejectsPath: String?
    /// The campaign's own templates (`<locale>/subject.mustache`, …), read from disk into the ledger; nil keeps the
    /// campaign's current ones (the global templates for a new campaign).
    public var templates: [TemplateFile]?
    /// Create the campaign paused, before any row is queued, so nothing goes out until it is resumed (the console's
    /// review step). A campaign that exists already keeps its state.
    public var startPaused: Bool
    /// Refuse a name that is taken (before anything is written) instead of resuming that campaign's import.
    public var requireNewName: Bool

    public init(
        name: String, kind: ActionKind, source: Source, continueURL: String? = nil, rate: Double? = nil, startAt: Date = Date(),
        linkLifetime: TimeInterval? = nil, rejectsPath: String? = nil, templates: [TemplateFile]? = nil, startPaused: Bool = false,
        requireNewName: Bool = false
    ) {
        self.templates = templates
        self.startPaused = startPaused
        self.requireNewName = requireNewName
        self.name = name
        self.kind = kind
        self.source = source
        self.continueURL = continueURL
        self.rate = rate
        self.startAt = startAt
        self.linkLifetime = linkLifetime
        self.rejectsPath = rejectsPath
    }
}

/// What one import did.
public struct CampaignImportSummary: Sendable {
    public var imported = 0
    public var rejected = 0
    public var alreadyImported = 0
}

/// What creating a campaign did.
public struct CampaignImport: Sendable {
    public let campaign: Campaign
    public let summary: CampaignImportSummary
    public let rejectsPath: String
}

/// Campaigns: one action to many recipients, imported from a CSV file or the account store through the
/// sending rules, then paced by the worker; listing, pausing, resuming and cancelling them.
///
/// ```swift
/// let created = try actions.campaigns.createCampaign(CampaignRequest(name: "welcome", kind: .verifyEmail, source: .csv(path: "list.csv")))
/// ```
public final class CampaignsService: Sendable, AccountOwnership {
    let store: any HeraldStore
    /// Whether Herald stores the accounts (`accounts.owner: herald`).
    public let ownsAccounts: Bool
    let links: HeraldConfiguration.Links
    /// The right-hand side of every Message-ID: the sender's domain.
    let messageDomain: String
    /// Signalled when a campaign resumes, so a worker in this process claims its rows at once.
    let queued: QueueSignal
    /// Checks a campaign's own templates, and renders its previews.
    let composer: MessageComposer

    init(_ parts: ServiceParts, composer: MessageComposer) {
        self.composer = composer
        store = parts.store
        ownsAccounts = parts.ownsAccounts
        links = parts.configuration.links
        messageDomain = parts.messageDomain
        queued = parts.queued
    }
}

extension CampaignsService {
    /// Creates a campaign (or resumes its import) and queues its recipients, each through the
    /// sending rules as an admin caller; refused rows go to the rejects file with the rule's code.
    ///
    /// - Throws: `ARGUMENT_ERROR` for a bad request or an unreadable file (before anything is written),
    ///   the settings' validation errors, `OPERATION_NOT_ALLOWED` for account sources when the app owns accounts.
    public func createCampaign(_ request: CampaignRequest) throws -> CampaignImport {
        guard request.kind != .verifyAndChangeEmail, request.kind.isRequestable else {
            throw HeraldError(.argumentError, "campaigns send verify-email, reset-password or sign-in")
        }
        let settings = ActionCodeSettings(url: request.continueURL, handleCodeInApp: request.kind == .signIn)
        try settings.validate(for: request.kind, authorizedDomains: links.authorizedDomains)
        // Templates that do not parse, or lack a part or the default locale, are refused before anything is written.
        if let files = request.templates { _ = try composer.campaign(request.kind, templates: files) }
        let sourceName: String
        switch request.source {
        case .csv(let path):
            _ = try CampaignImporter.header(of: path)  // fail before anything is written
            sourceName = path
        case .accounts(let unverifiedOnly):
            try requireAccountOwnership("a campaign from the account store")
            sourceName = unverifiedOnly ? "accounts (unverified)" : "accounts"
        }
        if request.requireNewName, try store.campaigns().contains(where: { $0.name == request.name }) {
            throw HeraldError(.argumentError, "a campaign named '\(request.name)' exists already; choose another name")
        }
        var campaign = try store.campaign(
            named: request.name, kind: request.kind, settings: settings, rate: request.rate, startAt: request.startAt,
            linkLifetime: request.linkLifetime, source: sourceName, now: Date())
        if let prunedAt = campaign.prunedAt {
            throw Campaign.prunedImportRefusal(id: campaign.id, name: campaign.name, prunedAt: prunedAt)
        }
        let kind = request.kind
        // Before any row is queued: no row of the campaign goes out with other templates than its own.
        if let files = request.templates { try store.setTemplates(files, campaign: campaign.id) }
        // Still before any row is queued: a worker claims only rows of active campaigns, so none of these is sent.
        if request.startPaused, campaign.state == .active {
            try store.pause(campaign: campaign.id, now: Date())
            campaign = try store.campaign(id: campaign.id)
        }
        let importer = try CampaignImporter(
            store: store, campaign: campaign, defaultLocale: links.defaultLocale, messageDomain: messageDomain
        ) { [self] emails in try campaignRefusals(kind, emails) }
        let summary: CampaignImportSummary
        let rejectsPath: String
        do {
            switch request.source {
            case .csv(let path):
                rejectsPath = request.rejectsPath ?? path + ".rejects.csv"
                summary = try importer.importCSV(path: path, rejectsPath: rejectsPath)
            case .accounts(let unverifiedOnly):
                rejectsPath = request.rejectsPath ?? "campaign-\(campaign.id).rejects.csv"
                summary = try importer.importAccounts(unverifiedOnly: unverifiedOnly, rejectsPath: rejectsPath)
            }
        } catch let error as HeraldError where error.code == .unavailable {
            // Cut short by the ledger (a full disk, an outage): what is committed stays, and the same command resumes.
            let held = (try? store.counts(campaign: campaign.id)).map { "\($0.values.reduce(0, +))" } ?? "an unknown number of"
            throw HeraldError(
                .unavailable,
                "\(error.detail); campaign \(campaign.id) \"\(campaign.name)\" holds \(held) rows committed before the failure: "
                    + "run the same command again to import the rest (rows already imported are skipped)")
        }
        return CampaignImport(campaign: campaign, summary: summary, rejectsPath: rejectsPath)
    }

    /// Why campaign mail of `kind` may not go to each of `emails` (canonical): the account rule, then the
    /// suppression list (every suppression stops campaign mail), in one query each.
    func campaignRefusals(_ kind: ActionKind, _ emails: [String]) throws -> [String: HeraldError] {
        var refusals: [String: HeraldError] = [:]
        if ownsAccounts, kind != .signIn {
            let standings = try store.standings(emails: emails)
            for email in emails {
                if let refusal = SendingService.accountRefusal(kind, standings[email]) { refusals[email] = refusal }
            }
        }
        for (email, suppression) in try store.suppressions(emails: emails) where refusals[email] == nil {
            refusals[email] = HeraldError(.recipientSuppressed, suppression.reason.rawValue)
        }
        return refusals
    }

    /// Every campaign with its progress, newest first: what the console, the CLI and the admin API show.
    public func campaigns(now: Date = Date()) throws -> [CampaignProgress] {
        let counts = try store.campaignCounts()
        return try store.campaigns().map { CampaignProgress($0, counts: counts[$0.id] ?? [:], now: now) }
            .sorted { $0.campaign.id > $1.campaign.id }
    }

    /// Each campaign's live rate and ETA (`CampaignPace`), from its messages sent over the last minute.
    public func paces(_ campaigns: [CampaignProgress], now: Date = Date()) throws -> [Int64: CampaignPace] {
        let sends = try store.campaignSends(since: now.addingTimeInterval(-CampaignPace.window))
        return Dictionary(
            uniqueKeysWithValues: campaigns.map { progress in
                (progress.campaign.id, CampaignPace(progress, sentInWindow: sends[progress.campaign.id] ?? 0))
            })
    }

    /// - Throws: `NOT_FOUND`.
    public func campaign(id: Int64, now: Date = Date()) throws -> CampaignProgress {
        CampaignProgress(try store.campaign(id: id), counts: try store.counts(campaign: id), now: now)
    }

    /// The composer of the campaign's mail: with its own templates, if it has them.
    public func composer(forCampaign id: Int64) throws -> MessageComposer {
        let campaign = try store.campaign(id: id)
        return try composer.campaign(campaign.kind, templates: try store.campaignTemplates(campaign: id))
    }

    public func pauseCampaign(id: Int64) throws { try store.pause(campaign: id, now: Date()) }

    public func resumeCampaign(id: Int64) throws {
        try store.resume(campaign: id, now: Date())
        queued.signal()
    }

    /// Cancels a campaign; returns how many unsent rows were cancelled.
    public func cancelCampaign(id: Int64) throws -> Int { try store.cancel(campaign: id, now: Date()) }
}
