import HeraldCore

/// A service whose rules depend on who owns the accounts (`accounts.owner`).
protocol AccountOwnership {
    /// Whether Herald stores the accounts (`accounts.owner: herald`).
    var ownsAccounts: Bool { get }
}

extension AccountOwnership {
    /// - Throws: `OPERATION_NOT_ALLOWED` when the app owns the accounts.
    func requireAccountOwnership(_ operation: String) throws {
        guard ownsAccounts else {
            throw HeraldError(
                .operationNotAllowed,
                "\(operation) needs Herald to own the accounts, but accounts.owner is app (the app redeems codes with codes:redeem)")
        }
    }
}
