import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Templates edited in the console: every save a revision, the newest of each (action, locale) in force.
@Suite struct TemplateRevisionStoreTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    func revision(_ kind: ActionKind, _ locale: String, _ subject: String?) throws -> TemplateRevision {
        TemplateRevision(
            kind: kind, locale: try LocaleTag(locale),
            parts: subject.map { TemplateParts(subject: $0, html: "<p>\($0)</p>", text: $0) },
            author: "admin:1a2b3c4d", createdAt: now)
    }

    @Test(arguments: StoreKind.allCases)
    func theNewestRevisionOfEachTemplateIsInForce(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        #expect(try store.currentTemplateRevisions().isEmpty)
        let first = try store.saveTemplateRevision(try revision(.resetPassword, "en", "One"))
        let second = try store.saveTemplateRevision(try revision(.resetPassword, "en", "Two"))
        let german = try store.saveTemplateRevision(try revision(.resetPassword, "de", "Zwei"))
        let verify = try store.saveTemplateRevision(try revision(.verifyEmail, "en", "Check"))
        #expect(first.id > 0 && second.id > first.id)
        let current = try store.currentTemplateRevisions()
        #expect(Set(current.map(\.id)) == [second.id, german.id, verify.id])
        #expect(current.first { $0.id == second.id }?.parts?.subject == "Two")
        let back = try store.saveTemplateRevision(try revision(.resetPassword, "en", nil))
        #expect(
            try store.currentTemplateRevisions().first {
                $0.kind == .resetPassword && $0.locale.value == "en"
            }?.isFile == true)
        let history = try store.templateRevisions(
            .resetPassword, locale: try LocaleTag("en"), limit: 10)
        #expect(history.map(\.id) == [back.id, second.id, first.id])
        #expect(
            history[1].author == "admin:1a2b3c4d" && history[1].createdAt == now
                && history[1].parts?.html == "<p>Two</p>")
        #expect(try store.templateRevision(id: first.id).parts?.text == "One")
        #expect(throws: HeraldError.self) { try store.templateRevision(id: 999_999) }
    }
}
