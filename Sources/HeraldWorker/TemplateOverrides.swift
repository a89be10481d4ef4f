import HeraldCore
import HeraldMail
import HeraldStore
import Synchronization

/// The worker's composer with the templates edited in the console in force (`TemplateRevision`): the newest revisions
/// are read from the ledger at most once a minute, as `CampaignComposers` reads campaign templates, so a save reaches
/// the next mail within a minute. A ledger that cannot be read keeps the composer last built (at first, the files'):
/// no mail waits or fails for it.
final class TemplateOverrides: Sendable {
    static let freshness: Double = 60

    /// The composer last built, the revisions it holds, and when they were read.
    private struct Current: Sendable {
        let composer: MessageComposer
        let revisions: [Int64]
        let readAt: MonotonicInstant
    }

    private let current = Mutex<Current?>(nil)

    /// `base` with the newest revisions in force; rebuilt only when they changed, so compiled templates are kept.
    func composer(base: MessageComposer, store: any OutboxStore) -> MessageComposer {
        let now = MonotonicInstant.now()
        let known = current.withLock { $0 }
        if let known, now.seconds(since: known.readAt) < Self.freshness { return known.composer }
        let next: Current
        do {
            let revisions = try store.currentTemplateRevisions()
            let ids = revisions.map(\.id)
            if let known, known.revisions == ids {
                next = Current(composer: known.composer, revisions: ids, readAt: now)
            } else {
                next = Current(composer: try base.overriding(revisions), revisions: ids, readAt: now)
            }
        } catch {
            // Unreadable ledger or a revision that no longer parses: keep what mail went out with, and ask again later.
            next = Current(
                composer: known?.composer ?? base, revisions: known?.revisions ?? [], readAt: now)
        }
        current.withLock { $0 = next }
        return next.composer
    }
}
