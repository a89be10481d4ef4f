import Foundation
import HeraldCore
import HeraldMail
import HeraldStore
import Logging

/// What recipients tell us: bounces and complaints read from the bounce address, one-click unsubscribes, and the
/// suppression list they feed (which an operator edits too).
///
/// ```swift
/// let result = try actions.feedback.ingestBounce(message, recipients: ["bounces+42-mac@bounces.example.com"])
/// ```
public final class FeedbackService: Sendable {
    let store: any HeraldStore
    /// Reads the outbox row out of a bounce's address (`bounces.domain`), as the composer wrote it.
    let verp: VERPAddress?
    /// Verifies one-click unsubscribe links (`campaigns.unsubscribeUrl`).
    let unsubscribeTokens: UnsubscribeToken?
    /// How many soft bounces, within what time, suppress an address.
    let bounces: HeraldConfiguration.Bounces
    let logger: Logger

    init(_ parts: ServiceParts, composer: MessageComposer) {
        store = parts.store
        verp = composer.verp
        unsubscribeTokens = composer.unsubscribeTokens
        bounces = parts.configuration.bounces
        logger = parts.logger
    }
}
