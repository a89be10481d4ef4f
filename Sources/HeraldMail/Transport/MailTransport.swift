/// Sends encoded messages, blocking; one instance is one connection, used by one thread at a time.
/// The seam the worker's tests script servers at (`ThreadedDispatcher` drives it); Herald's own SMTP
/// is `CurlSMTPDispatcher`.
public protocol MailTransport: AnyObject {
    /// Delivers `message` to `recipients`, reusing the open connection when there is one.
    func send(from sender: String, to recipients: [String], message: [UInt8]) -> DeliveryResult

    /// How many connections this transport has opened so far.
    var connectionsOpened: Int { get }
}

/// What the server said about one message.
public struct DeliveryResult: Sendable, Hashable {
    /// How the worker should treat the result.
    public enum Outcome: String, Sendable {
        /// Accepted (2xx after DATA).
        case sent
        /// The message's own RCPT or DATA got a 4xx: worth retrying, and the attempt counts.
        case transient
        /// The message's own RCPT or DATA (or a 552 size refusal to MAIL) got a 5xx: rejected for good.
        case permanent
        /// The server or the connection failed, not the message: refused, timed out, TLS or AUTH
        /// failed, a non-220 greeting, a refusal of EHLO/HELO or MAIL, any 421, a dropped connection,
        /// all before the message's final dot was written. The message is not charged; the connection
        /// pauses and reconnects.
        case connection
        /// The final dot was written and no reply came: the wait for it timed out (`smtp.dataTimeout`) or
        /// the connection broke. The server may have taken the message (RFC 1047), so a resend may be a
        /// duplicate: the attempt is charged and the message goes again only a bounded number of times.
        case possiblyDelivered = "possibly-delivered"
        /// Nothing of the message was delivered: it waited behind another on a pipelining connection
        /// (`MailDispatcher.depth`) that failed first. It goes back to the queue as if never claimed.
        case unsent
    }

    public let outcome: Outcome
    /// The last SMTP reply code, when the server answered.
    public let replyCode: Int?
    /// The last SMTP reply line, or libcurl's explanation when the server never answered.
    public let replyText: String

    public init(outcome: Outcome, replyCode: Int?, replyText: String) {
        self.outcome = outcome
        self.replyCode = replyCode
        self.replyText = replyText
    }
}
