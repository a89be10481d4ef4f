import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// The pages an action link opens (`/__/auth/action`) and the hosting-link redirect (`/__/auth/links`).
///
/// A GET never consumes a code (mail scanners pre-fetch links); it is recorded as a click. The POST
/// consumes, and must carry the form's token, an HMAC of the code under the server key (CSRF).
struct ActionPages: Sendable {
    let context: ServerContext

    func show(_ request: Request, _ requestContext: HeraldRequestContext) async -> Response {
        let query = Self.parameters(request.uri.query ?? "")
        let lang = query["lang"]
        let visitor = Visitor(ip: requestContext.remoteIP, userAgent: request.headers[.userAgent])
        guard let (kind, code) = actionParameters(query) else { return page(.error, lang, ["message": "missing_parameters"], .badRequest) }
        let store = context.store
        let record: CodeRecord?
        do {
            record = try await offload {
                let record = try store.code(code)
                try store.recordLinkEvent(codeID: record?.id, kind: "click", visitor: visitor)
                return record
            }
        } catch {
            return page(.error, lang, ["message": "invalid_code"], .internalServerError)
        }
        if let failure = problem(record, kind) { return page(.error, lang, ["message": failure], .badRequest) }
        let continueURL = authorizedContinueURL(query["continueUrl"])
        switch kind {
        case .signIn:
            guard let continueURL else { return page(.error, lang, ["message": "missing_parameters"], .badRequest) }
            // The app completes sign-in with the link's parameters (accounts:signInWithEmailLink).
            var components = URLComponents(string: continueURL)!
            components.queryItems =
                (components.queryItems ?? []) + [
                    URLQueryItem(name: "apiKey", value: context.configuration.project.apiKey), URLQueryItem(name: "oobCode", value: code),
                    URLQueryItem(name: "mode", value: kind.mode), URLQueryItem(name: "lang", value: context.pages.resolve(lang).value),
                ]
            return Self.redirect(components.string ?? continueURL)
        case .verifyEmail, .verifyAndChangeEmail, .resetPassword:
            var values = formValues(kind, code, continueURL, lang)
            values["email"] = record?.email
            values["newEmail"] = record?.newEmail
            return page(kind == .resetPassword ? .resetForm : .verifyConfirm, lang, values, .ok)
        }
    }

    func submit(_ request: Request, _ requestContext: HeraldRequestContext) async -> Response {
        var request = request
        guard let body = try? await request.collectBody(upTo: 16 * 1024) else {
            return page(.error, nil, ["message": "missing_parameters"], .badRequest)
        }
        let form = Self.parameters(String(buffer: body))
        let lang = form["lang"]
        let visitor = Visitor(ip: requestContext.remoteIP, userAgent: request.headers[.userAgent])
        guard let (kind, code) = actionParameters(form), kind != .signIn else {
            return page(.error, lang, ["message": "missing_parameters"], .badRequest)
        }
        guard let token = form["csrfToken"], Secret.equal(token, csrfToken(code)) else {
            let store = context.store
            _ = try? await offload {
                try store.recordLinkEvent(codeID: try store.code(code)?.id, kind: "rejected", visitor: visitor, detail: "CSRF")
            }
            return page(.error, lang, ["message": "csrf_failed"], .forbidden)
        }
        let continueURL = authorizedContinueURL(form["continueUrl"])
        let context = self.context
        do {
            let message: String
            if kind == .resetPassword {
                let password = form["newPassword"] ?? ""
                if (try? PasswordHasher.checkStrength(password)) == nil {
                    var values = formValues(kind, code, continueURL, lang)
                    values["message"] = "weak_password"
                    values["email"] = try await offload { try context.store.code(code)?.email }
                    return page(.resetForm, lang, values, .badRequest)
                }
                _ = try await offload { try context.applyPasswordReset(code: code, newPassword: password, visitor: visitor) }
                message = "password_changed"
            } else {
                let (_, record) = try await offload { try context.applyVerification(code: code, visitor: visitor) }
                message = record.kind == .verifyAndChangeEmail ? "changed" : "verified"
            }
            if let continueURL { return Self.redirect(continueURL) }
            return page(.success, lang, ["message": message], .ok)
        } catch let error as HeraldError {
            let message = error.code == .expiredOOBCode ? "expired_code" : "invalid_code"
            return page(.error, lang, ["message": message], .badRequest)
        } catch {
            return page(.error, lang, ["message": "invalid_code"], .internalServerError)
        }
    }

    /// `/__/auth/links?link=…`: redirects to the wrapped action link, only if it is one of ours.
    func unwrap(_ request: Request) -> Response {
        let query = Self.parameters(request.uri.query ?? "")
        guard let link = query["link"], link.hasPrefix(context.configuration.links.actionURL + "?") else {
            return page(.error, query["lang"], ["message": "missing_parameters"], .badRequest)
        }
        return Self.redirect(link)
    }

    // MARK: - Helpers

    func csrfToken(_ code: String) -> String { context.signer.sign("csrf:" + code) }

    private func actionParameters(_ values: [String: String]) -> (ActionKind, String)? {
        guard let mode = values["mode"], let kind = ActionKind(mode: mode), let code = values["oobCode"], !code.isEmpty,
            let apiKey = values["apiKey"], Secret.equal(apiKey, context.configuration.project.apiKey)
        else { return nil }
        return (kind, code)
    }

    /// The message key explaining why a code cannot be used, or nil when it can.
    private func problem(_ record: CodeRecord?, _ kind: ActionKind) -> String? {
        guard let record, record.kind == kind else { return "invalid_code" }
        if record.redeemedAt != nil { return "used_code" }
        if record.supersededAt != nil { return "invalid_code" }
        return record.expiresAt <= Date() ? "expired_code" : nil
    }

    private func authorizedContinueURL(_ url: String?) -> String? {
        guard let url, !url.isEmpty else { return nil }
        let check = ActionCodeSettings(url: url)
        return (try? check.validate(for: .verifyEmail, authorizedDomains: context.configuration.links.authorizedDomains)) != nil ? url : nil
    }

    private func formValues(_ kind: ActionKind, _ code: String, _ continueURL: String?, _ lang: String?) -> [String: String] {
        var values = [
            "mode": kind.mode, "oobCode": code, "apiKey": context.configuration.project.apiKey, "csrfToken": csrfToken(code),
        ]
        values["continueUrl"] = continueURL
        return values
    }

    private func page(_ kind: PageRenderer.Kind, _ lang: String?, _ values: [String: String], _ status: HTTPResponse.Status) -> Response {
        var values = values
        let locale = context.pages.resolve(lang)
        if let key = values["message"] { values["message"] = context.pages.text(key, lang: locale) }
        let html = context.pages.render(kind, lang: lang, values: values)
        return Response(status: status, headers: Self.pageHeaders, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    static let pageHeaders: HTTPFields = [
        .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
        .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        .init("Referrer-Policy")!: "no-referrer", .init("X-Frame-Options")!: "DENY",
    ]

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    /// Query or form parameters, percent- and `+`-decoded; the first occurrence of a name wins.
    static func parameters(_ encoded: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in encoded.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            let name = decode(parts[0])
            if result[name] == nil { result[name] = parts.count > 1 ? decode(parts[1]) : "" }
        }
        return result
    }
}
