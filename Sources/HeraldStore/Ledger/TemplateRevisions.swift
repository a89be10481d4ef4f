import Foundation
import HeraldCore

extension LedgerEngine {
    public func saveTemplateRevision(_ revision: TemplateRevision) throws -> TemplateRevision {
        try write { db in
            let id =
                try db.value(
                    """
                    INSERT INTO template_revisions (action, locale, subject, html, text, author, created_at)
                    VALUES (:action, :locale, :subject, :html, :text, :author, :at) RETURNING id
                    """,
                    [
                        "action": revision.kind.rawValue, "locale": revision.locale.value,
                        "subject": revision.parts?.subject,
                        "html": revision.parts?.html, "text": revision.parts?.text, "author": revision.author,
                        "at": revision.createdAt.milliseconds,
                    ], as: Int64.self) ?? 0
            var saved = revision
            saved.id = id
            return saved
        }
    }

    public func templateRevisions(_ kind: ActionKind, locale: LocaleTag, limit: Int) throws
        -> [TemplateRevision]
    {
        try read { db in
            try db.fetchAll(
                "SELECT * FROM template_revisions WHERE action = ? AND locale = ? ORDER BY id DESC LIMIT ?",
                [kind.rawValue, locale.value, max(1, min(limit, 1000))]
            ).map(Self.templateRevision)
        }
    }

    public func templateRevision(id: Int64) throws -> TemplateRevision {
        try read { db in
            guard let row = try db.fetchOne("SELECT * FROM template_revisions WHERE id = ?", [id]) else {
                throw HeraldError(.notFound, "no template revision \(id)")
            }
            return try Self.templateRevision(row)
        }
    }

    /// The newest revision of each (action, locale) that has one, by `template_revisions_target` (action, locale, id):
    /// one index seek per edited template; the table grows by console saves only.
    public func currentTemplateRevisions() throws -> [TemplateRevision] {
        try read { db in
            try db.fetchAll(
                """
                SELECT * FROM template_revisions t
                WHERE id = (SELECT MAX(id) FROM template_revisions WHERE action = t.action AND locale = t.locale)
                ORDER BY action, locale
                """, []
            ).compactMap { row in try? Self.templateRevision(row) }
        }
    }

    static func templateRevision(_ plain: some LedgerRow) throws -> TemplateRevision {
        let row = RecordRow(plain)
        guard let kind = ActionKind(rawValue: row["action"]) else {
            throw HeraldError(
                .notFound, "template revision \(row["id"] as Int64) names no action Herald knows")
        }
        let subject: String? = row["subject"]
        let html: String? = row["html"]
        let text: String? = row["text"]
        let parts = subject.flatMap { subject in
            html.flatMap { html in text.map { TemplateParts(subject: subject, html: html, text: $0) } }
        }
        return TemplateRevision(
            id: row["id"], kind: kind, locale: try LocaleTag(row["locale"] as String), parts: parts,
            author: row["author"],
            createdAt: Date(milliseconds: row["created_at"]))
    }
}
