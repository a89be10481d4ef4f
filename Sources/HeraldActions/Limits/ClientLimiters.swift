import HeraldCore

/// The abuse limits per client network and per account address, built once from `limits` and shared by the
/// services that apply them.
struct ClientLimiters: Sendable {
    /// App emails per client network (`limits.ipSendsPerMinute`, `ipBurst`, `ipSendsPerHour`); also the hosted
    /// sign-in handler's starts, each a call to the provider.
    let send: ClientLimiter
    /// Attempts with codes that do not exist, per client network (`limits.ipBadCodesPerMinute`).
    let badCode: ClientLimiter
    /// App sign-ups per client network (`limits.ipSignUpsPerHour`).
    let signUp: ClientLimiter
    /// Failed password sign-ins per account address (`limits.signInFailuresPerAccount`) and per client network
    /// (`limits.ipSignInFailuresPerHour`): password guessing.
    let accountFailures: ClientLimiter
    let clientFailures: ClientLimiter
    /// Wrong admin tokens (bearer or the console's sign-in form) per client network
    /// (`limits.ipSignInFailuresPerHour`), apart from the users' sign-ins so neither locks the other out.
    let adminTokenFailures: ClientLimiter

    init(_ limits: HeraldConfiguration.Limits) {
        let prefix = limits.ipv6ClientPrefix
        send = ClientLimiter(
            rules: [
                .init(capacity: limits.ipBurst, perMinute: limits.ipSendsPerMinute),
                .init(capacity: limits.ipSendsPerHour, perHour: limits.ipSendsPerHour),
            ], ipv6Prefix: prefix)
        badCode = ClientLimiter(rules: [.init(capacity: limits.ipBadCodesPerMinute, perMinute: limits.ipBadCodesPerMinute)], ipv6Prefix: prefix)
        signUp = ClientLimiter(rules: [.init(capacity: limits.ipSignUpsPerHour, perHour: limits.ipSignUpsPerHour)], ipv6Prefix: prefix)
        // N failures in a row, then one more every quarter of an hour.
        accountFailures = ClientLimiter(
            rules: [.init(capacity: limits.signInFailuresPerAccount, perHour: 4)], keyed: .verbatim)
        clientFailures = ClientLimiter(
            rules: [.init(capacity: limits.ipSignInFailuresPerHour, perHour: limits.ipSignInFailuresPerHour)], ipv6Prefix: prefix)
        adminTokenFailures = ClientLimiter(
            rules: [.init(capacity: limits.ipSignInFailuresPerHour, perHour: limits.ipSignInFailuresPerHour)], keyed: .verbatim,
            ipv6Prefix: prefix)
    }
}
