import Foundation
import HeraldCore
import HeraldHTTPClient
import JWTKit
import Synchronization

/// Each OIDC provider's signing keys: read from `jwksFile`, or fetched from `jwksUrl` with libcurl and kept
/// for an hour. A token signed with a key the cache does not know makes it fetch again, at most once a
/// minute, so a provider's key rotation is picked up without letting forged `kid`s hammer the provider.
///
/// A fetch runs on a thread of its own, never on the threads the ledger's work shares (a provider that hangs
/// stalls only its own sign-ins), with a short timeout; one fetch per provider is in flight at a time and every
/// caller waiting for that provider's keys shares it; a failed fetch is remembered, and the provider is not asked
/// again before a backoff (1 s, doubling per failure up to a minute) has passed — meanwhile its sign-ins fail at once.
final class JWKSCache: Sendable {
    private struct Entry {
        let keys: JWTKeyCollection
        let fetchedAt: Date
    }

    private struct Failure {
        let error: HeraldError
        let at: MonotonicInstant
        let count: Int
        var retryAfter: TimeInterval { min(JWKSCache.maximumBackoff, pow(2, Double(count - 1))) }
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var inFlight: [String: Task<JWTKeyCollection, any Error>] = [:]
        var failures: [String: Failure] = [:]
    }

    static let lifetime: TimeInterval = 3600
    static let minimumRefetch: TimeInterval = 60
    static let maximumBackoff: TimeInterval = 60
    /// How long one fetch may take.
    static let fetchTimeout = 3
    private let state = Mutex(State())
    private let client = CurlHTTPClient(timeout: JWKSCache.fetchTimeout)

    /// The provider's keys, fetched when missing or stale (or, with `refresh`, older than a minute).
    ///
    /// - Throws: `INVALID_IDP_RESPONSE` when the keys cannot be read or parsed (`UNAVAILABLE` when unreachable), also
    ///   without asking again while a failed fetch's backoff lasts.
    func keys(for provider: HeraldConfiguration.Providers.OIDC, refresh: Bool = false, now: Date = Date()) async throws -> JWTKeyCollection {
        let client = client
        let task = try state.withLock { state -> Task<JWTKeyCollection, any Error> in
            if let entry = state.entries[provider.id], now.timeIntervalSince(entry.fetchedAt) < (refresh ? Self.minimumRefetch : Self.lifetime) {
                return Task { entry.keys }
            }
            if let running = state.inFlight[provider.id] { return running }
            if let failure = state.failures[provider.id], MonotonicInstant.now().seconds(since: failure.at) < failure.retryAfter {
                throw failure.error
            }
            let fetch = Task { () throws -> JWTKeyCollection in
                let json = try await Self.onOwnThread { try Self.read(provider, client: client) }
                let keys = JWTKeyCollection()
                do {
                    _ = try await keys.add(jwksJSON: json)
                } catch {
                    throw HeraldError(.invalidIDPResponse, "the \(provider.id) signing keys are not a JWKS")
                }
                return keys
            }
            state.inFlight[provider.id] = fetch
            return fetch
        }
        do {
            let keys = try await task.value
            state.withLock { state in
                if state.inFlight[provider.id] == task {
                    state.inFlight[provider.id] = nil
                    state.entries[provider.id] = Entry(keys: keys, fetchedAt: now)
                    state.failures[provider.id] = nil
                }
            }
            return keys
        } catch {
            let failure = error as? HeraldError ?? HeraldError(.unavailable, "\(provider.id)'s JWKS: \(error)")
            state.withLock { state in
                if state.inFlight[provider.id] == task {
                    state.inFlight[provider.id] = nil
                    let count = (state.failures[provider.id]?.count ?? 0) + 1
                    state.failures[provider.id] = Failure(error: failure, at: .now(), count: count)
                }
            }
            throw failure
        }
    }

    /// Runs blocking `work` on a new thread (a fetch may hang up to its timeout), not on the shared blocking pool.
    private static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.named("herald-jwks") { continuation.resume(with: Result { try work() }) }.start()
        }
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
