import Foundation
import HeraldCore

/// Templates edited in the console: every save a revision, the newest of each (action, locale) in force.
public protocol TemplateRevisionStore: Sendable {
    /// Appends `revision` (its `id` is ignored) and returns it as saved.
    func saveTemplateRevision(_ revision: TemplateRevision) throws -> TemplateRevision

    /// The revisions of one action's template in one locale, newest first, at most `limit`.
    func templateRevisions(_ kind: ActionKind, locale: LocaleTag, limit: Int) throws
        -> [TemplateRevision]

    /// One revision. - Throws: `NOT_FOUND`.
    func templateRevision(id: Int64) throws -> TemplateRevision
}
