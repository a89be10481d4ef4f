import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// Lets a signed-in browser through to the console: others are sent to the sign-in form. A `POST` must also
/// carry the session's CSRF token in its form's `csrf` field, or it is refused with 403 and changes nothing; a
/// read-only session's `POST`s (but signing out) are refused with 403 too, and its pages are rendered without change
/// forms (`ConsolePage.canChange`).
///
/// Every `POST` but signing out is written to the ledger's action log with the session's actor once it has been
/// answered (`ConsoleActionNotes`): what the handler noted, a read-only session's refusal, or a failure.
///
/// The admin API's bearer token (`AdminCredential`) may `GET` the pages of ``apiReadable``, which answer JSON for
/// `Accept: application/json`: the console and the API list the same campaigns from the same query.
///
/// One route is read as a stream rather than a form: the `multipart/form-data` upload of a new campaign
/// (`uploadPath`). Its `csrf` field is the form's first part, which the handler reads from the stream and hands to
/// `ConsoleUploadGate` before it keeps a byte of the file or writes to the ledger; the gate refuses as above. A
/// multipart `POST` to any other path has no form `csrf` field and is refused.
struct ConsoleAuthMiddleware: RouterMiddleware {
    let sessions: ConsoleSessions
    /// Where the action log goes.
    let console: ConsoleService
    /// The admin API's credential, for ``apiReadable``.
    let api: AdminCredential

    /// The console's paths that the admin API may read with its bearer token.
    static let apiReadable: Set<String> = ["\(ConsoleSessions.path)/campaigns"]

    /// The one field the middleware reads from a form.
    struct CSRFField: Decodable {
        var csrf: String?
    }

    func handle(
        _ request: Request, context: HeraldRequestContext, next: (Request, HeraldRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let session = sessions.verify(request.cookies[ConsoleSessions.cookie]?.value) else {
            if request.method == .get, request.headers[.authorization] != nil, Self.apiReadable.contains(request.uri.path) {
                try api.authenticate(request, context: context)
                var context = context
                context.caller = .admin
                return try await ConsolePage.$canChange.withValue(false) { try await next(request, context) }
            }
            return ConsolePage.redirect(to: "/admin/sign-in")
        }
        var context = context
        context.consoleSession = session
        context.caller = .admin
        guard request.method == .post else {
            return try await ConsolePage.$canChange.withValue(session.canChange) { try await next(request, context) }
        }
        let path = request.uri.path
        if path == Self.uploadPath, ConsoleUpload.boundary(of: request) != nil {
            return try await upload(request, context: context, session: session, next: next)
        }
        var request = request
        let form = try await ConsoleForm.read(&request, as: CSRFField.self)
        guard let presented = form?.csrf, Secret.equal(presented, session.csrf) else { return Self.expired }
        if path == "\(ConsoleSessions.path)/sign-out" {
            return try await next(request, context)
        }
        if session.readOnly {
            return await refuseReadOnly(session, path: path, context: context)
        }
        let notes = ConsoleActionNotes()
        let response = try await ConsoleActionNotes.$current.withValue(notes) {
            try await ConsolePage.$canChange.withValue(session.canChange) { try await next(request, context) }
        }
        await record(notes.entries(actor: session.actorLabel, path: path, status: response.status), context: context)
        return response
    }

    /// The one route whose `POST` is `multipart/form-data`: a new campaign's recipients file.
    static let uploadPath = "\(ConsoleSessions.path)/campaigns/new"

    /// A form without the session's CSRF token.
    static var expired: Response {
        ConsolePage.message(
            "Refused", "This form has expired or did not come from the console. Go back, reload the page and try again.",
            status: .forbidden)
    }

    /// A read-only session's change: refused, and written to the action log.
    private func refuseReadOnly(_ session: ConsoleSessions.Session, path: String, context: HeraldRequestContext) async -> Response {
        context.logger.notice(
            "console: read-only session refused a change", metadata: ["actor": "\(session.actor)", "path": "\(path)"])
        let refusal = ConsoleAction(
            at: Date(), actor: session.actorLabel, action: ConsoleActionNotes.action(path: path), detail: "read-only session",
            result: .refused)
        await record([refusal], context: context)
        return ConsolePage.message(
            "Read only",
            "This session was signed in with the read-only token: it shows every page and changes nothing. "
                + "Sign in with the admin token to do this.", status: .forbidden)
    }

    /// The multipart upload: the handler streams the body and asks the gate with the form's first field; the gate
    /// refuses a wrong token and a read-only session as a form `POST` is refused. What the handler noted is logged
    /// as for any `POST`, unless the gate refused it (a read-only refusal is logged by the gate itself).
    private func upload(
        _ request: Request, context: HeraldRequestContext, session: ConsoleSessions.Session,
        next: (Request, HeraldRequestContext) async throws -> Response
    ) async throws -> Response {
        let path = request.uri.path
        let gate = ConsoleUploadGate { presented in
            guard let presented, Secret.equal(presented, session.csrf) else { return Self.expired }
            return session.readOnly ? await refuseReadOnly(session, path: path, context: context) : nil
        }
        var context = context
        context.consoleUploadGate = gate
        let notes = ConsoleActionNotes()
        let response = try await ConsoleActionNotes.$current.withValue(notes) {
            try await ConsolePage.$canChange.withValue(session.canChange) { try await next(request, context) }
        }
        if gate.admitted {
            await record(notes.entries(actor: session.actorLabel, path: path, status: response.status), context: context)
        }
        return response
    }

    /// Writes `actions` to the log. A ledger that cannot take them does not undo or hide the change: the process log
    /// keeps the line `logAction` wrote.
    private func record(_ actions: [ConsoleAction], context: HeraldRequestContext) async {
        for action in actions {
            do {
                try await offload { [console] in try console.record(action) }
            } catch {
                context.logger.warning(
                    "console: the action log did not take an entry", metadata: ["action": "\(action.action)", "error": "\(error)"])
            }
        }
    }
}

/// A console form's URL-encoded body.
enum ConsoleForm {
    /// Largest form body the console reads.
    static let limit = 64 * 1024

    /// Decodes the body (collected once, so a handler may read it again); nil when it is not a form of `T`.
    static func read<T: Decodable>(_ request: inout Request, as type: T.Type) async throws -> T? {
        let body = try await request.collectBody(upTo: limit)
        return try? URLEncodedFormDecoder().decode(T.self, from: String(buffer: body))
    }
}
