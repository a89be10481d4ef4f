import HeraldCore
import HeraldMail
import HeraldStore
import Synchronization

/// The composer of each campaign's mail: the worker's own, or one with the campaign's templates (`campaigns create
/// --templates`), read from the ledger when a row of the campaign is rendered and read again a minute later, so a set
/// replaced by a later `create` reaches running workers.
final class CampaignComposers: Sendable {
    static let freshness: Double = 60
    private let composers = Mutex<[Int64: (composer: MessageComposer, readAt: MonotonicInstant)]>([:])

    /// The composer for `message`: `base` for transactional mail and campaigns without templates of their own.
    ///
    /// - Throws: what reading the ledger throws (the row is tried again later), `TEMPLATE_ERROR` for templates that no
    ///   longer parse.
    func composer(for message: OutboxMessage, base: MessageComposer, store: any OutboxStore) throws -> MessageComposer {
        guard let campaign = message.campaignID else { return base }
        let now = MonotonicInstant.now()
        if let known = composers.withLock({ $0[campaign] }), now.seconds(since: known.readAt) < Self.freshness { return known.composer }
        let composer = try base.campaign(message.kind, templates: try store.campaignTemplates(campaign: campaign))
        composers.withLock { $0[campaign] = (composer, now) }
        return composer
    }
}
