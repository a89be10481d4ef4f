import NIOCore

/// The LMTP/SMTP conversation of one connection as a state machine without I/O: lines in, replies out.
///
/// `MailConnection` feeds it lines, writes the replies, and runs the deliveries it asks for.
struct MailSession {
    struct Settings: Sendable {
        var dialect: MailListener.Dialect
        var hostname: String
        var maximumMessageSize: Int
        var maximumRecipients: Int
    }

    /// What the connection does after a line.
    enum Action {
        case none
        case reply(String)
        /// Writes the reply, then closes the connection.
        case close(String)
        /// Runs the delivery, then writes `delivered(_:)`'s replies.
        case deliver(MailListener.Delivery)
    }

    private enum Phase {
        case idle
        case mail
        case data
        case delivering
    }

    /// Commands longer than RFC 5321's 1000-octet text line, CRLF included, are refused.
    static let maximumCommandLength = MailLineDecoder.fragmentLength - 2
    /// Overlong lines tolerated before the connection is closed.
    static let maximumOverlongLines = 3
    /// Refused commands tolerated before the connection is closed (Postfix's `smtpd_hard_error_limit`).
    static let maximumErrors = 20

    let settings: Settings
    private var phase = Phase.idle
    private var greeted = false
    private var sender = ""
    private var recipients: [String] = []
    private var message: [UInt8] = []
    private var messageTooBig = false
    private var atLineStart = true
    private var discardingOverlongLine = false
    private var overlongLines = 0
    private var errors = 0

    init(settings: Settings) {
        self.settings = settings
    }

    /// Between MAIL and the reply to DATA: graceful shutdown waits for this to end.
    var isInTransaction: Bool { phase != .idle }

    var greeting: String {
        let product = settings.dialect == .lmtp ? "LMTP" : "ESMTP"
        return "220 \(settings.hostname) \(product) Herald\r\n"
    }

    mutating func receive(_ line: MailLine) -> Action {
        switch phase {
        case .data:
            return receiveMessageLine(line)
        case .delivering:
            return .close("421 4.3.0 \(settings.hostname) Error: command during delivery\r\n")
        case .idle, .mail:
            guard line.isComplete, !discardingOverlongLine, line.bytes.readableBytes <= Self.maximumCommandLength else {
                discardingOverlongLine = !line.isComplete
                return line.isComplete ? refuseOverlongLine() : .none
            }
            return receiveCommand(String(buffer: line.bytes))
        }
    }

    /// The replies to DATA once `deliver` has answered: one per recipient for LMTP, one for SMTP.
    mutating func delivered(_ outcomes: [MailListener.Outcome]) -> String {
        let padded = recipients.indices.map { index in
            index < outcomes.count ? outcomes[index] : .deferred("4.3.0 internal error")
        }
        resetTransaction()
        switch settings.dialect {
        case .lmtp:
            return padded.map(Self.reply(for:)).joined()
        case .smtp:
            let refusal = padded.first { $0 != .accepted }
            return refusal.map(Self.reply(for:)) ?? "250 2.0.0 Ok: queued\r\n"
        }
    }

    // MARK: - Commands

    private mutating func receiveCommand(_ line: String) -> Action {
        let verb = line.prefix { $0 != " " }.uppercased()
        let argument = line.dropFirst(verb.count).drop { $0 == " " }
        switch (verb, settings.dialect) {
        case ("LHLO", .lmtp), ("EHLO", .smtp):
            return hello(argument, extended: true)
        case ("HELO", .smtp):
            return hello(argument, extended: false)
        case ("MAIL", _):
            return mail(argument)
        case ("RCPT", _):
            return recipient(argument)
        case ("DATA", _):
            return data(argument)
        case ("RSET", _):
            resetTransaction()
            return .reply("250 2.0.0 Ok\r\n")
        case ("NOOP", _):
            return .reply("250 2.0.0 Ok\r\n")
        case ("VRFY", _):
            return .reply("252 2.5.2 Cannot VRFY user, but will accept message and attempt delivery\r\n")
        case ("QUIT", _):
            return .close("221 2.0.0 \(settings.hostname) closing connection\r\n")
        default:
            return refuse("500 5.5.2 Error: command not recognized")
        }
    }

    private mutating func hello(_ argument: Substring, extended: Bool) -> Action {
        guard !argument.isEmpty else {
            let verb = settings.dialect == .lmtp ? "LHLO" : (extended ? "EHLO" : "HELO")
            return refuse("501 5.5.4 Syntax: \(verb) hostname")
        }
        resetTransaction()
        greeted = true
        guard extended else { return .reply("250 \(settings.hostname)\r\n") }
        let lines = [
            settings.hostname, "PIPELINING", "8BITMIME", "ENHANCEDSTATUSCODES", "SIZE \(settings.maximumMessageSize)",
        ]
        let text = lines.enumerated().map { index, line in
            "250\(index == lines.count - 1 ? " " : "-")\(line)\r\n"
        }
        return .reply(text.joined())
    }

    private mutating func mail(_ argument: Substring) -> Action {
        guard greeted else {
            return refuse("503 5.5.1 Error: send \(settings.dialect == .lmtp ? "LHLO" : "HELO/EHLO") first")
        }
        guard phase == .idle else { return refuse("503 5.5.1 Error: nested MAIL command") }
        guard let (address, parameters) = Self.path(argument, keyword: "FROM:") else {
            return refuse("501 5.5.4 Syntax: MAIL FROM:<address>")
        }
        for parameter in parameters where parameter.uppercased().hasPrefix("SIZE=") {
            guard let size = Int(parameter.dropFirst(5)) else { return refuse("501 5.5.4 Bad SIZE parameter") }
            guard size <= settings.maximumMessageSize else {
                return .reply("552 5.3.4 Message size exceeds fixed limit\r\n")
            }
        }
        sender = address
        phase = .mail
        return .reply("250 2.1.0 Ok\r\n")
    }

    private mutating func recipient(_ argument: Substring) -> Action {
        guard phase == .mail else { return refuse("503 5.5.1 Error: need MAIL command") }
        guard let (address, _) = Self.path(argument, keyword: "TO:"), !address.isEmpty else {
            return refuse("501 5.5.4 Syntax: RCPT TO:<address>")
        }
        guard recipients.count < settings.maximumRecipients else {
            return .reply("452 4.5.3 Error: too many recipients\r\n")
        }
        recipients.append(address)
        return .reply("250 2.1.5 Ok\r\n")
    }

    private mutating func data(_ argument: Substring) -> Action {
        guard argument.isEmpty else { return refuse("501 5.5.4 Syntax: DATA") }
        guard phase == .mail else { return refuse("503 5.5.1 Error: need MAIL command") }
        guard !recipients.isEmpty else { return refuse("503 5.5.1 Error: need RCPT command") }
        phase = .data
        atLineStart = true
        return .reply("354 End data with <CR><LF>.<CR><LF>\r\n")
    }

    // MARK: - Message

    private mutating func receiveMessageLine(_ line: MailLine) -> Action {
        var bytes = line.bytes
        if atLineStart, bytes.readableBytesView.first == UInt8(ascii: ".") {
            if line.isComplete, bytes.readableBytes == 1 { return endOfMessage() }
            bytes.moveReaderIndex(forwardBy: 1)  // dot-unstuffing
        }
        atLineStart = line.isComplete
        let added = bytes.readableBytes + (line.isComplete ? 2 : 0)
        guard !messageTooBig, message.count + added <= settings.maximumMessageSize else {
            // Keep reading to the terminating dot, but let the message go.
            messageTooBig = true
            message = []
            return .none
        }
        message.append(contentsOf: bytes.readableBytesView)
        if line.isComplete {
            message.append(contentsOf: [UInt8(ascii: "\r"), UInt8(ascii: "\n")])
        }
        return .none
    }

    private mutating func endOfMessage() -> Action {
        guard !messageTooBig else {
            let count = settings.dialect == .lmtp ? recipients.count : 1
            resetTransaction()
            return .reply(String(repeating: "552 5.3.4 Error: message file too big\r\n", count: count))
        }
        let delivery = MailListener.Delivery(sender: sender, recipients: recipients, data: message)
        message = []
        phase = .delivering
        return .deliver(delivery)
    }

    // MARK: - Helpers

    private mutating func resetTransaction() {
        phase = .idle
        sender = ""
        recipients = []
        message = []
        messageTooBig = false
    }

    private mutating func refuse(_ reply: String) -> Action {
        errors += 1
        guard errors < Self.maximumErrors else { return .close("\(reply)\r\n" + tooManyErrors) }
        return .reply("\(reply)\r\n")
    }

    private mutating func refuseOverlongLine() -> Action {
        overlongLines += 1
        let reply = "500 5.5.2 Error: line too long\r\n"
        guard overlongLines < Self.maximumOverlongLines else { return .close(reply + tooManyErrors) }
        return refuse("500 5.5.2 Error: line too long")
    }

    private var tooManyErrors: String { "421 4.7.0 \(settings.hostname) Error: too many errors\r\n" }

    /// The address and parameters of `MAIL FROM:<address> PARAM=value …` or `RCPT TO:<address> …`.
    ///
    /// Lenient like Postfix: a space after the colon and a missing pair of brackets are accepted, and a
    /// source route (`<@relay:user@example.com>`) is dropped.
    static func path(_ argument: Substring, keyword: String) -> (address: String, parameters: [Substring])? {
        guard argument.uppercased().hasPrefix(keyword) else { return nil }
        let rest = argument.dropFirst(keyword.count).drop { $0 == " " }
        var address: Substring
        var parameters: Substring
        if rest.first == "<" {
            guard let close = rest.firstIndex(of: ">") else { return nil }
            address = rest[rest.index(after: rest.startIndex)..<close]
            parameters = rest[rest.index(after: close)...]
        } else {
            address = rest.prefix { $0 != " " }
            parameters = rest.dropFirst(address.count)
            guard !address.isEmpty else { return nil }
        }
        if address.first == "@", let colon = address.firstIndex(of: ":") {
            address = address[address.index(after: colon)...]
        }
        guard !address.contains(where: { $0 == " " || $0 == "<" || $0.asciiValue.map { $0 < 0x20 } == true }) else {
            return nil
        }
        guard parameters.isEmpty || parameters.first == " " else { return nil }
        return (String(address), parameters.split(separator: " "))
    }

    /// `250`, `550` or `451` with the outcome's text, which gets a generic enhanced status code if it has none.
    static func reply(for outcome: MailListener.Outcome) -> String {
        switch outcome {
        case .accepted:
            return "250 2.0.0 Ok\r\n"
        case .rejected(let text):
            return "550 \(statusText(text, defaultCode: "5.0.0"))\r\n"
        case .deferred(let text):
            return "451 \(statusText(text, defaultCode: "4.0.0"))\r\n"
        }
    }

    /// One printable line of at most 400 characters, so no text from `deliver` can break the reply stream.
    private static func statusText(_ text: String, defaultCode: String) -> String {
        let line = String(text.map { $0.asciiValue.map { (0x20..<0x7F).contains($0) } == true ? $0 : " " })
        let trimmed = line.trimmingPrefix(" ").prefix(400)
        let code = trimmed.prefix { $0 != " " }
        let parts = code.split(separator: ".", omittingEmptySubsequences: false)
        let hasCode =
            parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isNumber) }
        if hasCode { return String(trimmed) }
        return trimmed.isEmpty ? defaultCode : "\(defaultCode) \(trimmed)"
    }
}
