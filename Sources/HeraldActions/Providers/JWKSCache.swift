import Foundation
import HeraldCore
import HeraldHTTPClient
import JWTKit
import Synchronization

/// Each OIDC provider's signing keys: read from `jwksFile`, or fetched from `jwksUrl` with libcurl and kept
/// for an hour. A token signed with a key the cache does not know makes it fetch again, at most once a
/// minute, so a provider's key rotation is picked up without letting forged `kid`s hammer the provider.
final class JWKSCache: Sendable {
    private struct Entry {
        let keys: JWTKeyCollection
        let fetchedAt: Date
    }

    static let lifetime: TimeInterval = 3600
    static let minimumRefetch: TimeInterval = 60
    private let entries = Mutex<[String: Entry]>([:])
    private let client = CurlHTTPClient(timeout: 10)

    /// The provider's keys, fetched when missing or stale (or, with `refresh`, older than a minute).
    ///
    /// - Throws: `INVALID_IDP_RESPONSE` when the keys cannot be read or parsed (`UNAVAILABLE` when unreachable).
    func keys(for provider: HeraldConfiguration.Providers.OIDC, refresh: Bool = false, now: Date = Date()) async throws -> JWTKeyCollection {
        if let entry = entries.withLock({ $0[provider.id] }) {
            let age = now.timeIntervalSince(entry.fetchedAt)
            if age < (refresh ? Self.minimumRefetch : Self.lifetime) { return entry.keys }
        }
        let json = try await offload { [client] in try Self.read(provider, client: client) }
        let keys = JWTKeyCollection()
        do {
            _ = try await keys.add(jwksJSON: json)
        } catch {
            throw HeraldError(.invalidIDPResponse, "the \(provider.id) signing keys are not a JWKS")
        }
        entries.withLock { $0[provider.id] = Entry(keys: keys, fetchedAt: now) }
        return keys
    }

    private static func read(_ provider: HeraldConfiguration.Providers.OIDC, client: CurlHTTPClient) throws -> String {
        if !provider.jwksFile.isEmpty {
            guard let text = try? String(contentsOfFile: provider.jwksFile, encoding: .utf8) else {
                throw HeraldError(.invalidIDPResponse, "cannot read \(provider.id)'s jwksFile \(provider.jwksFile)")
            }
            return text
        }
        let answer = try client.get(provider.jwksURL, headers: ["Accept: application/json"])
        guard answer.status == 200 else {
            throw HeraldError(.unavailable, "\(provider.id)'s JWKS at \(provider.jwksURL) answered \(answer.status)")
        }
        return String(decoding: answer.body, as: UTF8.self)
    }
}
