/// A code's family: the other codes of the same email and action, which its redemption supersedes.
///
/// A code minted for an outbox row has that row's `email` and `action`, so the family's mailed codes are found
/// through the outbox's address indexes (`OutboxConditions.addressed`) and each row's codes (`action_codes_outbox`);
/// codes minted without a row (an administrator's `returnOobLink`) through `action_codes_minted_family`, an index of
/// those alone. A claim's codes then enter no index keyed by address: each of its forty inserts into the old
/// `(email, action)` index dirtied a page of its own (0.36 ms against 0.22 ms for forty, on a 117,000-code ledger).
enum CodeFamily {
    /// Supersedes every live code of `:email` and `:action` except `:id`, at `:now`.
    static let supersede = """
        UPDATE action_codes SET superseded_at = :now
        WHERE id IN (
            SELECT c.id FROM outbox o JOIN action_codes c ON c.outbox_id = o.id
            WHERE \(OutboxConditions.addressed(to: ":email", in: "o")) AND o.email = :email AND o.action = :action
            UNION ALL
            SELECT id FROM action_codes WHERE outbox_id IS NULL AND email = :email AND action = :action
        )
        AND id <> :id AND redeemed_at IS NULL AND superseded_at IS NULL
        """
}
