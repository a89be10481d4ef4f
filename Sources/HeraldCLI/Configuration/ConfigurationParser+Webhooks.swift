import Foundation
import HeraldCore

extension ConfigurationParser {
    /// The names of a file's `webhooks.<name>.<key>` sections (`webhooks.timeout` and the other globals have two parts).
    static func webhookNames(in keys: [String]) -> [String] {
        Set(
            keys.compactMap { key -> String? in
                let parts = key.split(separator: ".")
                return parts.count == 3 && parts[0] == "webhooks" ? String(parts[1]) : nil
            }
        ).sorted()
    }

    /// `webhooks.timeout`, `maxAttempts`, `backoffBase`, `backoffCap`, and each `webhooks.<name>`: `url` (https, or http
    /// to this host), `secret` (at least 32 characters; `HERALD_WEBHOOKS_<NAME>_SECRET`) and `events` (all by default).
    func parseWebhooks(_ c: inout HeraldConfiguration) async throws {
        c.webhooks.timeout = try await duration("webhooks.timeout", c.webhooks.timeout, positive: true)
        c.webhooks.maxAttempts = try await number("webhooks.maxAttempts", c.webhooks.maxAttempts, in: 1...1000)
        c.webhooks.backoffBase = try await duration("webhooks.backoffBase", c.webhooks.backoffBase, positive: true)
        c.webhooks.backoffCap = try await duration("webhooks.backoffCap", c.webhooks.backoffCap, positive: true)
        if c.webhooks.backoffCap < c.webhooks.backoffBase {
            throw problem("webhooks.backoffCap", "must not be shorter than webhooks.backoffBase")
        }
        let known = WebhookEvent.allCases.map(\.rawValue)
        for name in webhookNames {
            let prefix = "webhooks.\(name)"
            guard name.range(of: "^[a-z][a-z0-9_]{0,31}$", options: .regularExpression) != nil else {
                throw problem(
                    prefix, "expected an endpoint name of lower-case letters, digits and underscores (it names HERALD_WEBHOOKS_<NAME>_SECRET)")
            }
            let url = try await text("\(prefix).url", "") { Self.webhookURLProblem($0) }
            let secret = try await text("\(prefix).secret", "", secret: true) {
                $0.utf8.count >= 32
                    ? nil : "is required, at least 32 characters (set HERALD_WEBHOOKS_\(name.uppercased())_SECRET; `openssl rand -hex 32` makes one)"
            }
            let events = try await list("\(prefix).events", known) {
                known.contains($0) ? nil : "unknown event '\($0)'; expected some of \(known.joined(separator: ", "))"
            }
            guard !events.isEmpty else { throw problem("\(prefix).events", "must name at least one event (leave it out for all)") }
            c.webhooks.endpoints.append(
                .init(name: name, url: url, secret: secret, events: Set(events.compactMap(WebhookEvent.init(rawValue:)))))
        }
    }

    /// https anywhere; plain http only to this host (a receiver beside Herald, tests), never across a network.
    static func webhookURLProblem(_ value: String) -> String? {
        guard !value.isEmpty else { return "is required" }
        guard let url = URLComponents(string: value), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty,
            url.user == nil, url.password == nil
        else { return "expected an https URL without credentials, got '\(value)'" }
        let loopback = ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host)
        if scheme == "https" || (scheme == "http" && loopback) { return nil }
        return "expected an https URL (http only to localhost), got '\(value)'"
    }
}
