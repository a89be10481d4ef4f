import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import Hummingbird

/// Editing a template in the console: Preview renders the editor's text into the page without saving, Save keeps it in
/// the ledger once it renders, and each revision in the history can be brought back, as can the file.
extension ConsoleController {
    /// The editor's fields (browsers send a textarea's lines with CRLF; the files have LF).
    struct TemplateFields: Decodable {
        var subject: String?
        var html: String?
        var text: String?

        var parts: TemplateParts {
            func lines(_ text: String?) -> String {
                (text ?? "").replacingOccurrences(of: "\r\n", with: "\n")
            }
            return TemplateParts(subject: lines(subject), html: lines(html), text: lines(text))
        }
    }

    /// The editor's text, and the template the path names (nil: none).
    private func editorForm(_ request: Request, context: HeraldRequestContext) async throws -> (TemplateParts, (ActionKind, LocaleTag)?) {
        var request = request
        let parts = (try await ConsoleForm.read(&request, as: TemplateFields.self) ?? TemplateFields()).parts
        return (parts, try? templateTarget(context))
    }

    /// The revert form: a revision's id, or `file`.
    struct RevertFields: Decodable {
        var revision: String?
    }

    /// The editor: the source in force (or the draft being previewed), Preview and Save.
    static func templateEditor(
        base: String, csrf: String, parts: TemplateParts, inForce: TemplateRevision?
    ) -> String {
        let origin =
            inForce.flatMap { revision in
                revision.isFile
                    ? nil
                    : "revision \(revision.id), saved by \(ConsolePage.escape(revision.author)) at \(revision.createdAt.iso8601)"
            } ?? "the files of <code>templates.directory</code>"
        return ConsolePage.changing(
            """
            <h2>Edit</h2>
            <p class="muted" id="in-force">In force: \(origin). Mustache, as in the files; Save renders it with the sample \
            data first and refuses what does not render.</p>
            <form id="template-edit" method="post" action="\(base)/save">
            <input type="hidden" name="csrf" value="\(ConsolePage.escape(csrf))">
            <label>Subject <textarea name="subject" rows="2" cols="80">\(ConsolePage.escape(parts.subject))</textarea></label>
            <label>HTML body <textarea name="html" rows="14" cols="80">\(ConsolePage.escape(parts.html))</textarea></label>
            <label>Text body <textarea name="text" rows="10" cols="80">\(ConsolePage.escape(parts.text))</textarea></label>
            <p><button id="template-preview-button" type="submit" formaction="\(base)/preview">Preview</button> \
            <button id="template-save-button" type="submit">Save</button></p></form>
            """)
    }

    /// The revisions, newest first, each with who saved it and when, and a Revert button; "back to the file".
    static func templateHistory(base: String, csrf: String, history: [TemplateRevision]) -> String {
        let rows = history.enumerated().map { index, revision in
            let what = revision.isFile ? "back to the file" : "edit"
            let button =
                index == 0
                ? "in force"
                : ConsolePage.form(
                    action: "\(base)/revert", csrf: csrf, fields: ["revision": "\(revision.id)"],
                    button: "Revert to this", buttonClass: "revert")
            return """
                <tr id="revision-\(revision.id)"><td>\(revision.id)</td><td>\(revision.createdAt.iso8601)</td>\
                <td class="author">\(ConsolePage.escape(revision.author))</td><td class="kind">\(what)</td><td>\(button)</td></tr>
                """
        }
        let toFile =
            history.first.map { !$0.isFile } == true
            ? ConsolePage.form(
                id: "revert-file", action: "\(base)/revert", csrf: csrf, fields: ["revision": "file"],
                button: "Back to the file",
                buttonClass: "cancel")
            : ""
        return """
            <h2>History</h2>\(ConsolePage.table(
                id: "template-history", ["Revision", "Saved (UTC)", "By", "What", ""], rows,
                empty: "Never edited in the console: the files are in force."))
            <p>\(toFile)</p>
            """
    }

    /// `POST …/preview`: the editor's text rendered into the page, nothing saved; a text that does not render is shown
    /// with the renderer's error (400).
    @Sendable func previewTemplate(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let (parts, found) = try await editorForm(request, context: context)
        guard let target = found else { return failure(HeraldError(.notFound, "no such template"), "Template", context: context) }
        do {
            let content = try await offload { [console] in
                try console.previewDraft(target.0, locale: target.1, parts: parts)
            }
            return await templatePage(context: context, notice: nil, error: nil, draft: (parts, content))
        } catch let error as HeraldError where error.code != .unavailable {
            return await templatePage(
                context: context, notice: nil, error: error.description, draft: (parts, nil),
                status: .badRequest)
        } catch {
            return failure(error, "Template", context: context)
        }
    }

    /// `POST …/save`: a new revision once the text renders; else the page with the renderer's error (400), nothing saved.
    @Sendable func saveTemplate(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let (parts, found) = try await editorForm(request, context: context)
        guard let target = found else { return failure(HeraldError(.notFound, "no such template"), "Template", context: context) }
        let author = context.consoleSession?.actorLabel ?? "console"
        let saved: TemplateRevision
        do {
            saved = try await offload { [console] in
                try console.saveTemplate(target.0, locale: target.1, parts: parts, author: author)
            }
        } catch let error as HeraldError where error.code != .unavailable {
            return await templatePage(
                context: context, notice: nil, error: "Not saved: \(error.description)",
                draft: (parts, nil), status: .badRequest)
        } catch {
            return failure(error, "Template", context: context)
        }
        logAction(
            "template saved", target: "\(target.0.rawValue)/\(target.1.value)", context: context,
            ["revision": "\(saved.id)"])
        return ConsolePage.redirect(
            to: "/admin/templates/\(target.0.rawValue)/\(target.1.value)?done=saved")
    }

    /// `POST …/revert`: a new revision copying an older one (`revision=<id>`), or back to the file (`revision=file`).
    @Sendable func revertTemplate(_ request: Request, context: HeraldRequestContext) async throws
        -> Response
    {
        var request = request
        let field = nonEmpty(try await ConsoleForm.read(&request, as: RevertFields.self)?.revision)
        let target: (ActionKind, LocaleTag)
        let from: Int64?
        do {
            target = try templateTarget(context)
            switch field {
            case "file": from = nil
            case let text?:
                guard let id = Int64(text) else {
                    throw HeraldError(.argumentError, "revision must be a revision's id or file")
                }
                from = id
            case nil: throw HeraldError(.argumentError, "name the revision to revert to")
            }
        } catch {
            return failure(error, "Template", context: context)
        }
        let author = context.consoleSession?.actorLabel ?? "console"
        let saved: TemplateRevision
        do {
            saved = try await offload { [console] in
                try console.revertTemplate(target.0, locale: target.1, to: from, author: author)
            }
        } catch {
            return failure(error, "Template", context: context)
        }
        logAction(
            "template reverted", target: "\(target.0.rawValue)/\(target.1.value)", context: context,
            ["revision": "\(saved.id)", "from": "\(from.map(String.init) ?? "file")"])
        return ConsolePage.redirect(
            to: "/admin/templates/\(target.0.rawValue)/\(target.1.value)?done=reverted")
    }
}
