import Foundation
import HeraldCore

/// A multipart/alternative email, encoded to the bytes libcurl uploads.
///
/// ```swift
/// let message = MailMessage(from: from, to: to, subject: "Hi", text: "…", html: "<p>…</p>",
///                           messageID: "<abc@example.com>", date: Date())
/// let bytes = try message.encoded()
/// ```
public struct MailMessage: Sendable {
    public var from: Mailbox
    public var to: Mailbox
    public var replyTo: Mailbox?
    public var subject: String
    public var text: String
    public var html: String
    /// `<…@…>`; stable per outbox row so receivers can de-duplicate a resend.
    public var messageID: String
    public var date: Date
    /// Extra headers appended after the standard ones (e.g. `List-Unsubscribe`).
    public var extraHeaders: [(name: String, value: String)]

    public init(
        from: Mailbox, to: Mailbox, replyTo: Mailbox? = nil, subject: String, text: String, html: String,
        messageID: String, date: Date, extraHeaders: [(name: String, value: String)] = []
    ) {
        self.from = from
        self.to = to
        self.replyTo = replyTo
        self.subject = subject
        self.text = text
        self.html = html
        self.messageID = messageID
        self.date = date
        self.extraHeaders = extraHeaders
    }

    /// The RFC 5322 message with CRLF line endings and no line over 998 octets.
    ///
    /// - Throws: `INVALID_HEADER` when a header value contains CR, LF or another control character.
    public func encoded() throws -> [UInt8] {
        try encoded(text: Body(text), html: Body(html))
    }

    /// A body in its transfer encoding, written into the message by `write`.
    struct Body {
        let encoding: BodyEncoding
        let write: (inout [UInt8]) -> Void

        /// `text` in the encoding `BodyEncoding.choose` picks for it.
        init(_ text: String) {
            let encoding = BodyEncoding.choose(for: text)
            self.init(encoding: encoding) { encoding.encode(text, into: &$0) }
        }

        init(encoding: BodyEncoding, write: @escaping (inout [UInt8]) -> Void) {
            self.encoding = encoding
            self.write = write
        }
    }

    /// The message with `text` and `html` as its bodies in place of the `text` and `html` properties.
    func encoded(text: Body, html: Body) throws -> [UInt8] {
        try HeaderEncoding.checkValue(subject, header: "Subject")
        try HeaderEncoding.checkValue(messageID, header: "Message-ID")
        for header in extraHeaders {
            try HeaderEncoding.checkValue(header.name, header: "extra")
            try HeaderEncoding.checkValue(header.value, header: header.name)
        }
        let boundary = "=_herald_" + Self.boundaryToken(messageID)
        var out = [UInt8]()
        out.reserveCapacity(self.text.utf8.count * 2 + self.html.utf8.count * 2 + 8192)
        func header(_ name: String, _ value: String) {
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: value.utf8)
            out.append(contentsOf: [13, 10])
        }
        header("From", from.headerValue)
        header("To", to.headerValue)
        if let replyTo { header("Reply-To", replyTo.headerValue) }
        header("Subject", HeaderEncoding.unstructured(subject, nameLength: 7))
        header("Date", UTCDate.rfc5322(date))
        header("Message-ID", messageID)
        header("MIME-Version", "1.0")
        header("Auto-Submitted", "auto-generated")
        for extra in extraHeaders { header(extra.name, extra.value) }
        header("Content-Type", "multipart/alternative; boundary=\"\(boundary)\"")
        out.append(contentsOf: [13, 10])
        for (type, body) in [("text/plain", text), ("text/html", html)] {
            out.append(contentsOf: "--\(boundary)\r\n".utf8)
            header("Content-Type", "\(type); charset=utf-8")
            header("Content-Transfer-Encoding", body.encoding.rawValue)
            out.append(contentsOf: [13, 10])
            body.write(&out)
        }
        out.append(contentsOf: "--\(boundary)--\r\n".utf8)
        return out
    }

    /// A boundary that cannot occur in QP or base64 output (both never emit "=_").
    private static func boundaryToken(_ messageID: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in messageID.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 36)
    }
}
