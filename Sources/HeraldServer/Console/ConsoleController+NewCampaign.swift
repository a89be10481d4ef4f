import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

#if canImport(Glibc)
    import Glibc
#endif

/// `/admin/campaigns/new`: a campaign from an uploaded recipients file, as `herald campaigns create` makes one, but
/// created paused; then its review (the first rows, the rejects) with Start and Discard.
extension ConsoleController {
    /// The actions a campaign may send.
    static let campaignActions: [ActionKind] = [.verifyEmail, .resetPassword, .signIn]
    /// Queued rows and rejects the review shows.
    static let reviewRows = 10

    @Sendable func newCampaignForm(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        newCampaignPage([:], error: nil, status: .ok, context: context)
    }

    /// The form, filled in with `fields` (the file is chosen again), with one error line.
    func newCampaignPage(
        _ fields: [String: String], error: String?, status: HTTPResponse.Status, context: HeraldRequestContext
    ) -> Response {
        func value(_ name: String) -> String { ConsolePage.escape(fields[name] ?? "") }
        let chosen = fields["action"] ?? ActionKind.verifyEmail.rawValue
        let actions = Self.campaignActions.map { kind in
            #"<option value="\#(kind.rawValue)"\#(kind.rawValue == chosen ? " selected" : "")>\#(kind.rawValue)</option>"#
        }.joined()
        let form = """
            <form id="new-campaign" method="post" action="/admin/campaigns/new" enctype="multipart/form-data">\
            <input type="hidden" name="csrf" value="\(ConsolePage.escape(context.consoleSession?.csrf ?? ""))">
            <p><label>Name <input id="name" name="name" required maxlength="200" value="\(value("name"))"></label></p>
            <p><label>Action <select id="action" name="action">\(actions)</select></label></p>
            <p><label>Recipients (CSV: an <code>email</code> column; optional <code>display_name</code>, <code>locale</code>; \
            other columns become template variables) <input id="recipients" name="\(ConsoleUpload.fileField)" type="file" \
            accept=".csv,text/csv" required></label></p>
            <p><label>Continue URL (optional; its host must be authorized) <input id="continue-url" name="continue_url" \
            type="url" value="\(value("continue_url"))"></label></p>
            <p><label>Rate (optional: 50/s, 600/m or 10000/h) <input id="rate" name="rate" value="\(value("rate"))"></label></p>
            <p><label>Start (now, +10m or 2026-11-22T10:00:00Z; empty: now) <input id="start-at" name="start_at" \
            value="\(value("start_at"))"></label></p>
            <p><label>Link lifetime (optional: 90m, 48h, 7d) <input id="link-lifetime" name="link_lifetime" \
            value="\(value("link_lifetime"))"></label></p>
            <p><button id="create" type="submit">Create paused campaign</button> <a href="/admin/campaigns">Back</a></p></form>
            <p class="muted">The campaign is created paused: nothing is sent until you press Start on the next page, \
            where you see its first rows and the rows it refused.</p>
            """
        let body =
            ConsolePage.error(error)
            + (ConsolePage.canChange ? form : #"<p class="muted" id="read-only-note">This session is read-only: it cannot create campaigns.</p>"#)
        return ConsolePage.response(
            ConsolePage.html("New campaign", body, session: context.consoleSession, current: "campaigns"), status: status)
    }

    /// `POST /admin/campaigns/new`: streams the upload to disk (`ConsoleUpload`, after the CSRF gate), creates the
    /// campaign paused and imports the file, its rejects beside it; then the review. A bad request answers the form
    /// again with one error line and keeps nothing.
    @Sendable func createCampaign(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let gate = context.consoleUploadGate else {
            return newCampaignPage([:], error: "The form must be sent as multipart/form-data.", status: .badRequest, context: context)
        }
        let form: ConsoleUpload.Form
        switch try await upload.read(request, gate: gate) {
        case .form(let read): form = read
        case .refused(let refusal): return refusal
        case .tooLarge(let line): return newCampaignPage([:], error: line, status: .contentTooLarge, context: context)
        case .malformed(let line): return newCampaignPage([:], error: line, status: .badRequest, context: context)
        case .unavailable(let line): return newCampaignPage([:], error: line, status: .serviceUnavailable, context: context)
        }
        let created: CampaignImport
        do {
            let campaignRequest = try Self.campaignRequest(form)
            created = try await offload { try campaigns.createCampaign(campaignRequest) }
        } catch {
            await discardUpload(form)
            return createFailure(error, form, context: context)
        }
        let id = created.campaign.id
        let rejects = rejectsPath(campaign: id)
        do {
            try await offload {
                guard rename(created.rejectsPath, rejects) == 0, chmod(rejects, 0o600) == 0 else {
                    throw HeraldError(.unavailable, String(cString: strerror(errno)))
                }
            }
        } catch {
            context.logger.warning("console: the rejects file was not moved", metadata: ["campaign": "\(id)", "error": "\(error)"])
        }
        logAction(
            "campaign created", context: context,
            ["campaign": "\(id)", "accepted": "\(created.summary.imported)", "rejected": "\(created.summary.rejected)"])
        return ConsolePage.redirect(to: "/admin/campaigns/\(id)/review")
    }

    /// The request the form makes: the CLI's options, read by the same parsers, and the campaign created paused.
    static func campaignRequest(_ form: ConsoleUpload.Form) throws -> CampaignRequest {
        func field(_ name: String) -> String? {
            let value = form.fields[name]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            return value.isEmpty ? nil : value
        }
        guard let name = field("name") else { throw HeraldError(.argumentError, "Give the campaign a name.") }
        guard name.count <= 200 else { throw HeraldError(.argumentError, "The name is longer than 200 characters.") }
        guard let kind = field("action").flatMap(ActionKind.init(rawValue:)), campaignActions.contains(kind) else {
            throw HeraldError(.argumentError, "Choose the action: verify-email, reset-password or sign-in.")
        }
        guard form.chosenFile else { throw HeraldError(.argumentError, "Choose a CSV file of recipients.") }
        guard let file = form.file else { throw HeraldError(.argumentError, "The recipients file is empty.") }
        return CampaignRequest(
            name: name, kind: kind, source: .csv(path: file.path), continueURL: field("continue_url"),
            rate: try field("rate").map { try CampaignOptionText.rate($0, option: "Rate") },
            startAt: try field("start_at").map { (text: String) throws -> Date in
                do {
                    return try CampaignOptionText.time(text)
                } catch let error as HeraldError {
                    throw HeraldError(.argumentError, "Start: \(error.detail)")
                }
            } ?? Date(),
            linkLifetime: try field("link_lifetime").map { try CampaignOptionText.linkLifetime($0, option: "Link lifetime") },
            startPaused: true, requireNewName: true)
    }

    /// The form again with the reason: a `HeraldError`'s line (the upload's path named as "the uploaded file").
    private func createFailure(_ error: any Error, _ form: ConsoleUpload.Form, context: HeraldRequestContext) -> Response {
        guard let error = error as? HeraldError, error.code != .unavailable else {
            return failure(error, "New campaign", context: context)
        }
        let line = form.file.map { error.detail.replacingOccurrences(of: $0.path, with: "the uploaded file") } ?? error.detail
        return newCampaignPage(form.fields, error: line, status: .badRequest, context: context)
    }

    /// Removes a refused upload and any rejects file its import began.
    private func discardUpload(_ form: ConsoleUpload.Form) async {
        guard let file = form.file else { return }
        _ = try? await offload {
            file.remove()
            unlink(file.path + ".rejects.csv")
        }
    }

    /// Where the console keeps campaign `id`'s rejects file.
    func rejectsPath(campaign id: Int64) -> String { "\(upload.directory)/campaign-\(id).rejects.csv" }

    // MARK: Review

    /// `GET /admin/campaigns/{id}/review`: what the import queued and refused, and Start / Discard.
    @Sendable func reviewCampaign(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id", as: Int64.self) else {
            return failure(HeraldError(.notFound, "no such campaign"), "Campaigns", context: context)
        }
        let progress: CampaignProgress
        let rows: [OutboxMessage]
        let rejects: [CampaignReject]?
        let path = rejectsPath(campaign: id)
        do {
            progress = try await offload { try campaigns.campaign(id: id) }
            var oldest = MessageSearch(campaign: id)
            oldest.newerThan = 0  // the oldest rows: the file's first ones
            let search = oldest
            rows = Array(try await offload { try console.searchMessages(search, limit: Self.reviewRows) }.reversed())
            rejects = try? await offload { try campaigns.rejects(path: path, limit: Self.reviewRows) }
        } catch {
            return failure(error, "Campaign \(id)", context: context)
        }
        let body = Self.reviewBody(progress, rows: rows, rejects: rejects, csrf: context.consoleSession?.csrf ?? "")
        return ConsolePage.response(
            ConsolePage.html("Review campaign \(id)", body, session: context.consoleSession, current: "campaigns"))
    }

    static func reviewBody(_ progress: CampaignProgress, rows: [OutboxMessage], rejects: [CampaignReject]?, csrf: String) -> String {
        let campaign = progress.campaign
        let base = "/admin/campaigns/\(campaign.id)"
        let state =
            progress.status == .paused
            ? "It is paused: nothing is sent until you press Start."
            : "It is \(progress.status.rawValue)."
        let queued = rows.map { row in
            """
            <tr><td class="email">\(ConsolePage.escape(row.recipient.value))</td>\
            <td class="display-name">\(ConsolePage.escape(row.displayName ?? ""))</td>\
            <td class="locale">\(ConsolePage.escape(row.locale.value))</td></tr>
            """
        }
        let refused = (rejects ?? []).map { reject in
            #"<tr><td class="line">\#(reject.line)</td><td class="reason">\#(ConsolePage.escape(reject.reason))</td></tr>"#
        }
        let download =
            rejects == nil || campaign.rejected == 0
            ? "" : #"<p><a id="rejects-csv" href="\#(base)/rejects.csv">Download all \#(campaign.rejected) rejected rows (CSV)</a></p>"#
        var buttons: [String] = []
        if progress.status == .paused {
            buttons.append(ConsolePage.form(id: "start", action: "\(base)/resume", csrf: csrf, button: "Start", buttonClass: "resume"))
        }
        if progress.status.canCancel {
            buttons.append(ConsolePage.form(id: "discard", action: "\(base)/cancel", csrf: csrf, button: "Discard…", buttonClass: "cancel"))
        }
        return """
            <p id="summary"><strong>\(ConsolePage.escape(campaign.name))</strong> (\(campaign.kind.rawValue)): \
            <span id="accepted">\(progress.total)</span> rows queued, <span id="rejected">\(campaign.rejected)</span> rejected. \
            <span id="state" data-state="\(progress.status.rawValue)">\(ConsolePage.escape(state))</span></p>
            <p>\(buttons.joined(separator: " "))</p>
            <h2>First queued rows</h2>\(ConsolePage.table(id: "queued", ["Address", "Name", "Locale"], queued, empty: "No row was queued."))
            <h2>First rejected rows</h2>\(ConsolePage.table(id: "rejects", ["Line", "Reason"], refused, empty: rejects == nil ? "No rejects file from the console." : "No row was rejected."))
            \(download)<p><a id="report" href="\(base)">Report</a> · <a href="/admin/campaigns">Campaigns</a></p>
            """
    }

    /// `GET /admin/campaigns/{id}/rejects.csv`: the whole rejects file (`line,reason,content`) as a download.
    @Sendable func campaignRejects(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id", as: Int64.self) else {
            return failure(HeraldError(.notFound, "no such campaign"), "Campaigns", context: context)
        }
        let path = rejectsPath(campaign: id)
        guard FileManager.default.isReadableFile(atPath: path) else {
            return failure(HeraldError(.notFound, "campaign \(id) has no rejects file from the console"), "Campaign \(id)", context: context)
        }
        let body = try await FileIO().loadFile(path: path, context: context)
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/csv; charset=utf-8", .cacheControl: "no-store",
                .contentDisposition: #"attachment; filename="campaign-\#(id).rejects.csv""#,
            ], body: body)
    }
}
