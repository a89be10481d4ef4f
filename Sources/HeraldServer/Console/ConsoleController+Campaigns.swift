import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/admin/campaigns`: every campaign with its progress, live rate and ETA, and pause / resume / cancel (creating one:
/// `+NewCampaign`); as JSON (`herald campaigns list --format json`'s objects) for `Accept: application/json`, also
/// with the admin API's token.
extension ConsoleController {
    /// What a finished change says on the page it returns to (never text from the request).
    static let campaignNotices = ["paused": "Paused campaign", "resumed": "Resumed campaign", "cancelled": "Cancelled campaign"]

    @Sendable func campaigns(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let wantsJSON = (request.headers[.accept] ?? "").contains("application/json")
        let list: [CampaignProgress]
        let paces: [Int64: CampaignPace]
        do {
            (list, paces) = try await offload {
                let list = try campaigns.campaigns()
                return (list, try campaigns.paces(list))
            }
        } catch let error as HeraldError where wantsJSON {
            // The admin API's answer: Firebase's envelope, a 503 while the ledger is unavailable.
            throw FirebaseError(error)
        } catch {
            if wantsJSON { throw error }
            return failure(error, "Campaigns", context: context)
        }
        if wantsJSON {
            return try FirebaseJSONEncoder.response(list.map { CampaignJSON(progress: $0, pace: paces[$0.campaign.id]) })
        }
        let session = context.consoleSession
        let rows = list.map { Self.campaignRow($0, pace: paces[$0.campaign.id], csrf: session?.csrf ?? "") }
        let done = request.uri.queryParameters["done"].map(String.init).flatMap { Self.campaignNotices[$0] }
        let id = request.uri.queryParameters["id"].flatMap { Int64(String($0)) }
        let body =
            ConsolePage.notice(done.flatMap { text in id.map { "\(text) \($0)." } })
            + ConsolePage.changing(#"<p><a id="new-campaign" href="/admin/campaigns/new">New campaign</a></p>"#)
            + ConsolePage.table(
                id: "campaigns", ["ID", "Name", "Action", "State", "Progress", "Failed", "Rate", "ETA", "Report", ""], rows,
                empty: "No campaigns yet: create one here or with herald campaigns create.")
            + #"<p class="muted">This page refreshes every 10 seconds.</p>"#
        return ConsolePage.response(ConsolePage.html("Campaigns", body, session: session, current: "campaigns", refresh: (10, "/admin/campaigns")))
    }

    /// One campaign's row: its status as `CampaignProgress` states it (as `herald campaigns list` does), the start of a
    /// scheduled one, its live rate and ETA, and the buttons that apply.
    static func campaignRow(_ progress: CampaignProgress, pace: CampaignPace?, csrf: String) -> String {
        let campaign = progress.campaign
        let base = "/admin/campaigns/\(campaign.id)"
        var buttons: [String] = []
        if progress.status.canPause {
            buttons.append(ConsolePage.form(action: "\(base)/pause", csrf: csrf, button: "Pause", buttonClass: "pause"))
        }
        if progress.status == .paused {
            buttons.append(ConsolePage.form(action: "\(base)/resume", csrf: csrf, button: "Resume", buttonClass: "resume"))
        }
        if progress.status.canCancel {
            buttons.append(ConsolePage.form(action: "\(base)/cancel", csrf: csrf, button: "Cancel…", buttonClass: "cancel"))
        }
        let start =
            progress.status == .scheduled
            ? #" <span class="starts muted">starts <time datetime="\#(campaign.startAt.iso8601)">\#(campaign.startAt.iso8601)</time></span>"# : ""
        return """
            <tr id="campaign-\(campaign.id)"><td>\(campaign.id)</td><td class="name">\(ConsolePage.escape(campaign.name))</td>\
            <td>\(campaign.kind.rawValue)</td><td class="state">\(progress.status.rawValue)</td>\
            <td class="progress"><span class="sent">\(progress.sent)</span>/<span class="total">\(progress.total)</span> sent\(start)</td>\
            <td class="failed">\(progress.failed)</td>\
            <td class="rate">\(pace.map { Self.rate($0.rate) } ?? "")</td>\
            <td class="eta">\(pace?.eta.map { Self.age($0) } ?? "")</td>\
            <td><a class="report" href="\(base)">report</a></td><td>\(buttons.joined(separator: " "))</td></tr>
            """
    }

    /// A live rate: per second from one a second up, per minute below.
    static func rate(_ perSecond: Double) -> String {
        perSecond >= 1 ? String(format: "%.1f/s", perSecond) : String(format: "%.1f/min", perSecond * 60)
    }

    /// "Cancel campaign N?": its unsent rows will never go, and a cancelled campaign cannot be resumed.
    private func confirmCancel(_ id: Int64, context: HeraldRequestContext) async -> Response {
        let name: String
        do {
            name = try await offload { try campaigns.campaign(id: id).campaign.name }
        } catch {
            return failure(error, "Campaign \(id)", context: context)
        }
        let body = """
            <p>Cancelling <strong>\(ConsolePage.escape(name))</strong> stops its unsent messages for good: a cancelled campaign \
            cannot be resumed. Pause it instead to stop it for now.</p>
            <p>\(ConsolePage.form(
                id: "confirm-cancel", action: "/admin/campaigns/\(id)/cancel", csrf: context.consoleSession?.csrf ?? "",
                fields: ["confirm": "yes"], button: "Cancel campaign \(id)", buttonClass: "cancel")) \
            <a id="keep" href="/admin/campaigns">Keep it</a></p>
            """
        return ConsolePage.response(ConsolePage.html("Cancel campaign \(id)?", body, session: context.consoleSession, current: "campaigns"))
    }

    /// The buttons of a campaign's row.
    enum CampaignChange: String, CaseIterable, Sendable { case pause, resume, cancel }

    struct ConfirmField: Decodable {
        var confirm: String?
    }

    /// `POST /admin/campaigns/{id}/pause|resume|cancel`. A cancel cannot be undone: without `confirm=yes` it
    /// answers a page asking, whose button posts again with it.
    func changeCampaign(_ request: Request, context: HeraldRequestContext, _ change: CampaignChange) async throws -> Response {
        guard let id = context.parameters.get("id", as: Int64.self) else {
            return failure(HeraldError(.notFound, "no such campaign"), "Campaigns", context: context)
        }
        var request = request
        if change == .cancel, try await ConsoleForm.read(&request, as: ConfirmField.self)?.confirm != "yes" {
            return await confirmCancel(id, context: context)
        }
        let done: String
        do {
            switch change {
            case .pause:
                try await offload { try campaigns.pauseCampaign(id: id) }
                done = "paused"
            case .resume:
                try await offload { try campaigns.resumeCampaign(id: id) }
                done = "resumed"
            case .cancel:
                _ = try await offload { try campaigns.cancelCampaign(id: id) }
                done = "cancelled"
            }
        } catch {
            return failure(error, "Campaign \(id)", context: context)
        }
        logAction("campaign \(done)", context: context, ["campaign": "\(id)"])
        return ConsolePage.redirect(to: "/admin/campaigns?done=\(done)&id=\(id)")
    }
}
