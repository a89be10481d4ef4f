import Foundation
import HeraldCore
import HeraldMail

/// One message to the relay now, outside the outbox (the console's test sends), over a dispatcher from the same
/// factory the `Worker` is built with: a single lane, opened for this message and closed after it.
///
/// ```swift
/// let delivery = SingleDelivery(configuration: configuration) { lanes in
///     try CurlSMTPDispatcher(settings: SMTPSettings(configuration.smtp), lanes: lanes)
/// }
/// let result = try delivery.deliver(composed)
/// ```
public struct SingleDelivery: Sendable {
    let makeDispatcher: @Sendable (_ lanes: Int) throws -> any MailDispatcher
    /// How long the relay has to answer: a connection and an exchange (`smtp.connectTimeout`, `smtp.timeout` and the
    /// final dot's `smtp.dataTimeout`), and five seconds more.
    let patience: TimeInterval

    public init(configuration: HeraldConfiguration, makeDispatcher: @escaping @Sendable (_ lanes: Int) throws -> any MailDispatcher) {
        self.makeDispatcher = makeDispatcher
        let smtp = configuration.smtp
        patience = smtp.connectTimeout + smtp.timeout + smtp.dataTimeout + 5
    }

    /// Sends `message` on a lane of its own and returns the relay's answer, or a `.connection` result when none
    /// comes in time.
    ///
    /// - Throws: what opening the dispatcher throws.
    public func deliver(_ message: MessageComposer.Composed) throws -> DeliveryResult {
        let dispatcher = try makeDispatcher(1)
        defer { dispatcher.close() }
        dispatcher.start(lane: 0, from: message.envelopeFrom, to: [message.recipient], message: message.bytes)
        let deadline = Date().addingTimeInterval(patience)
        while Date() < deadline {
            if let finished = dispatcher.poll(timeout: 0.25).first { return finished.result }
        }
        return DeliveryResult(outcome: .connection, replyCode: nil, replyText: "no answer from the relay in time")
    }
}
