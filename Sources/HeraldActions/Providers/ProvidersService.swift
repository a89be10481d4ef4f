import Foundation
import HeraldCore
import HeraldStore
import Logging

/// Signing in with identity providers: `signInWithIdp` (verifying an OIDC ID token or Twitter's credentials, then
/// Firebase's account rules) and the hosted sign-in handler's web flow that obtains them.
///
/// ```swift
/// let result = try await actions.providers.signInWithIdp(IdpSignInRequest(postBody: body, requestUri: "http://localhost"))
/// ```
public final class ProvidersService: Sendable, AccountOwnership {
    let store: any HeraldStore
    /// Whether Herald stores the accounts (`accounts.owner: herald`).
    public let ownsAccounts: Bool
    /// The project's API key, which the handler's start must carry.
    let apiKey: String
    /// Emulator mode: any provider, with the Firebase emulator's unsigned assertions.
    let emulatorMode: Bool
    /// `server.enumerationProtection`: an unvouched address claims no account (`signInWithIdp`).
    let enumerationProtection: Bool
    /// `links.authorizedDomains`: the pages the handler hands a web sign-in to.
    let authorizedDomains: [String]
    /// The configured providers (`providers:`).
    let providers: HeraldConfiguration.Providers
    let sessions: SessionsService
    let refusals: RefusalCounter
    /// The handler's starts, each a call to the provider, count like app emails (`limits.ipSendsPerMinute`).
    let sendLimiter: ClientLimiter
    /// Forged or stale assertions count as failed sign-ins of the client (`limits.ipSignInFailuresPerHour`).
    let clientFailures: ClientLimiter
    /// The OIDC providers' signing keys.
    let jwks = JWKSCache()
    /// Seals the hosted sign-in handler's state and assertions.
    let handlerSeal: FlowSeal
    /// The handler assertions `verifyAssertion` already took.
    let spentAssertions = SpentAssertions()
    let logger: Logger

    init(_ parts: ServiceParts, handlerSeal: FlowSeal) {
        store = parts.store
        ownsAccounts = parts.ownsAccounts
        apiKey = parts.configuration.project.apiKey
        emulatorMode = parts.configuration.server.emulatorMode
        enumerationProtection = parts.configuration.server.enumerationProtection
        providers = parts.configuration.providers
        authorizedDomains = parts.configuration.links.authorizedDomains
        sessions = parts.sessions
        refusals = parts.refusals
        sendLimiter = parts.limiters.send
        clientFailures = parts.limiters.clientFailures
        self.handlerSeal = handlerSeal
        logger = parts.logger
    }
}
