import Foundation

/// Per-recipient limits on transactional mail: a cooldown between two emails of one action and a cap per 24 hours.
public struct SendThrottle: Sendable, Hashable {
    public var cooldown: TimeInterval
    public var dailyCap: Int

    public init(cooldown: TimeInterval, dailyCap: Int) {
        self.cooldown = cooldown
        self.dailyCap = dailyCap
    }
}

/// The hourly quotas on app-initiated email, counted in the ledger (`send_counts`) so they survive restarts.
public struct SendQuota: Sendable, Hashable {
    /// Emails per hour for the whole project; 0 is no limit.
    public var projectPerHour: Int
    /// Emails per hour about one account; 0 is no limit.
    public var accountPerHour: Int
    /// The account the request is about: its uid, or a hash of the address when it has no account.
    public var accountKey: String

    /// Emails per hour from the requesting client's network, its share of the project's; 0 is no limit.
    public var networkPerHour: Int
    /// The requesting client's network as the ledger keeps it (`IPNetwork.ledgerKey`: IPv4 /24, IPv6 /48).
    public var networkKey: String?

    public init(projectPerHour: Int, accountPerHour: Int, accountKey: String, networkPerHour: Int = 0, networkKey: String? = nil) {
        self.projectPerHour = projectPerHour
        self.accountPerHour = accountPerHour
        self.accountKey = accountKey
        self.networkPerHour = networkPerHour
        self.networkKey = networkKey
    }
}

/// A request a limit refused: which counter, for which key (as the ledger keeps it), and the answer.
public struct LimitRefusal: Error, Sendable {
    /// `recipient`, `account`, `network`, `project` (or `ip`, refused before the ledger).
    public let counter: String
    public let key: String
    public let error: HeraldError

    public init(counter: String, key: String, error: HeraldError) {
        self.counter = counter
        self.key = key
        self.error = error
    }
}

/// The send limits' decisions, from what the ledger counted: the same for a real send, a suppressed one and a
/// quota charged on its own.
public enum SendRules {
    /// Refuses a request inside the cooldown or over the daily cap, from the cooldown query's `sent` and `latest`.
    public static func checkCooldown(_ throttle: SendThrottle, key: String, at: Int64, sent: Int, latest: Int64?) throws {
        let coolingDown = latest.map { at - $0 < Int64(throttle.cooldown * 1000) } ?? false
        if coolingDown || sent >= throttle.dailyCap {
            throw LimitRefusal(counter: "recipient", key: EmailAddress.ledgerKey(key), error: HeraldError(.tooManyAttempts, ""))
        }
    }

    /// The quotas an email counts against: scope, key and hourly limit of each that applies. The network's share
    /// comes first, so a network past it is told `TOO_MANY_ATTEMPTS` and counts nothing against the project.
    public static func quotas(_ quota: SendQuota) -> [(scope: String, key: String, limit: Int)] {
        let network = quota.networkKey.map { [("network", $0, quota.networkPerHour)] } ?? []
        return (network + [("project", "", quota.projectPerHour), ("account", quota.accountKey, quota.accountPerHour)]).filter { $0.2 > 0 }
    }

    /// Refuses an email over a quota that has counted `count` this hour.
    public static func checkQuota(scope: String, key: String, limit: Int, count: Int) throws {
        if count >= limit {
            let error = HeraldError(scope == "project" ? .quotaExceeded : .tooManyAttempts, "")
            throw LimitRefusal(counter: scope, key: key, error: error)
        }
    }
}
