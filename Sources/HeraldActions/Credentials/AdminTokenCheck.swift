import Foundation
import HeraldCore

/// The administrator's token (`server.adminToken`), however it is presented — an admin call's bearer token or the
/// console's sign-in form — compared in constant time, with wrong tokens counted against the client's network like
/// failed password sign-ins (`limits.ipSignInFailuresPerHour`, in a count of its own).
///
/// Past the limit a wrong token is answered `lockedOut` (429) instead of `wrong`, but the right token is always
/// accepted: a network locked out by someone guessing from it (a shared NAT, the proxy's own address) never locks
/// the operator out. Guessing is hopeless anyway: the configuration refuses a token shorter than 32 bytes.
///
/// ```swift
/// switch actions.adminToken.check(presented, clientIP: "203.0.113.7") {
/// case .admin: …
/// case .wrong: … 401 …
/// case .lockedOut: … 429 …
/// }
/// ```
public final class AdminTokenCheck: Sendable {
    public enum Outcome: Sendable, Hashable {
        /// The admin token.
        case admin
        /// Not the token (or none is configured).
        case wrong
        /// Not the token, and the client's network has presented too many wrong ones.
        case lockedOut
    }

    /// Empty disables admin calls: nothing matches.
    let token: String
    let failures: ClientLimiter
    let refusals: RefusalCounter

    init(token: String, failures: ClientLimiter, refusals: RefusalCounter) {
        self.token = token
        self.failures = failures
        self.refusals = refusals
    }

    /// Whether `presented` is the admin token; a wrong one is counted against `clientIP`'s network (requests
    /// without a client address share one count).
    public func check(_ presented: String, clientIP: String?, now: Date = Date()) -> Outcome {
        if !token.isEmpty, Secret.equal(presented, token) { return .admin }
        let client = clientIP.flatMap { IPNetwork.client($0, ipv6Prefix: failures.ipv6Prefix)?.description } ?? "unknown"
        if failures.take(client, now: now) { return .wrong }
        let key = clientIP.map(IPNetwork.ledgerKey) ?? client
        _ = refusals.refused(LimitRefusal(counter: "admin-token-ip", key: key, error: AccountsService.lockedOut), now: now)
        return .lockedOut
    }
}
