import Foundation

/// An SMTP command, as far as telling whose failure a reply is goes.
enum SMTPCommand: Sendable {
    case greeting, ehlo, starttls, auth, mail, rcpt, data, quit

    init?(line: UnsafeRawBufferPointer) {
        var word = ""
        for byte in line.prefix(8) {
            guard (65...90).contains(byte) || (97...122).contains(byte) else { break }
            word.append(Character(Unicode.Scalar(byte & 0xDF)))
        }
        switch word {
        case "EHLO", "HELO": self = .ehlo
        case "STARTTLS": self = .starttls
        case "AUTH": self = .auth
        case "MAIL": self = .mail
        case "RCPT": self = .rcpt
        case "DATA": self = .data
        case "QUIT": self = .quit
        default: return nil
        }
    }

    /// How a refusal at this point reads in the ledger.
    var stage: String {
        switch self {
        case .greeting: "greeting"
        case .ehlo: "EHLO"
        case .starttls: "STARTTLS"
        case .auth: "AUTH"
        case .mail: "MAIL FROM"
        case .rcpt: "RCPT TO"
        case .data: "DATA"
        case .quit: "QUIT"
        }
    }
}

/// Whose failure a reply or an error is, and how the ledger words it.
///
/// Only replies to the message's own RCPT and DATA (and a 552 size refusal to MAIL) speak about the
/// message; everything else — refused or dropped connections, timeouts, TLS, AUTH, the greeting,
/// EHLO/HELO, MAIL, any 421 — is the connection's, and charges the message nothing. The exception is
/// silence after the final dot: a timeout or a cut then leaves the message possibly delivered.
enum SMTPVerdict {
    /// A 4xx/5xx `reply` to `command`.
    static func refusal(_ reply: String, to command: SMTPCommand) -> DeliveryResult {
        let code = Int(reply.prefix(3)) ?? 0
        let messageLevel: Bool
        switch command {
        case .rcpt, .data: messageLevel = code != 421 && ![530, 534, 535, 538].contains(code)
        case .mail: messageLevel = code == 552 || reply.contains("5.3.4")
        default: messageLevel = false
        }
        if messageLevel {
            return DeliveryResult(outcome: code >= 500 ? .permanent : .transient, replyCode: code, replyText: reply)
        }
        if command == .auth {
            return DeliveryResult(outcome: .connection, replyCode: code, replyText: "authentication failed: \(reply)")
        }
        return DeliveryResult(outcome: .connection, replyCode: code, replyText: "\(command.stage) refused: \(reply)")
    }

    /// The connection failed without a refusal: refused, timed out, dropped, TLS.
    static func broken(_ why: String, lastReply: String?) -> DeliveryResult {
        DeliveryResult(outcome: .connection, replyCode: nil, replyText: "\(why) (last reply: \(lastReply ?? "none"))")
    }

    /// The connection timed out or broke after the message's final dot was written: the server may have taken it.
    static func possiblyDelivered(_ why: String, lastReply: String?) -> DeliveryResult {
        DeliveryResult(
            outcome: .possiblyDelivered, replyCode: nil, replyText: "possibly delivered: \(why) (last reply: \(lastReply ?? "none"))")
    }

    /// Whether the server closed (or is closing) the connection: a `421`.
    static func isClosing(_ reply: String) -> Bool { reply.hasPrefix("421") }
}

/// Reply lines as they arrive on a connection, split into complete replies.
struct SMTPReplyReader {
    private var pending: [UInt8] = []

    /// A complete reply: its code and its last line (the one a multi-line reply ends with).
    struct Reply {
        let code: Int
        let line: String
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) { pending.append(contentsOf: bytes) }

    var isEmpty: Bool { pending.isEmpty }

    /// The next complete reply, or nil while its last line has not arrived. Continuation lines
    /// (`250-…`) are skipped; any other line ends a reply, and one that is not a reply becomes code 0.
    mutating func next() -> Reply? {
        while let newline = pending.firstIndex(of: 10) {
            var end = newline
            if end > 0, pending[end - 1] == 13 { end -= 1 }
            let isReply = end >= 3 && pending[0..<3].allSatisfy { (48...57).contains($0) }
            let isLast = isReply && (end == 3 || pending[3] != UInt8(ascii: "-"))
            defer { pending.removeSubrange(0...newline) }
            guard !isReply || isLast else { continue }
            let line = String(decoding: pending[0..<end], as: UTF8.self)
            let code = isReply ? Int(pending[0] - 48) * 100 + Int(pending[1] - 48) * 10 + Int(pending[2] - 48) : 0
            return Reply(code: code, line: line)
        }
        return nil
    }
}

/// A message as the DATA command carries it: lines starting with a dot get another (RFC 5321
/// 4.5.2), and the end-of-data line follows.
enum SMTPData {
    /// `room`: bytes to reserve beyond the block (the next message's commands, pipelined behind it).
    static func block(_ message: [UInt8], room: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(message.count + 8 + room)
        message.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return }
            var start = 0
            var lineStart = 0
            while lineStart < bytes.count {
                if base[lineStart] == UInt8(ascii: ".") {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<lineStart]))
                    out.append(UInt8(ascii: "."))
                    start = lineStart
                }
                // memchr: the line ends are most of what is read here.
                guard let newline = memchr(base + lineStart, 10, bytes.count - lineStart) else { break }
                lineStart = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(newline)) + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        if !(out.count >= 2 && out[out.count - 2] == 13 && out[out.count - 1] == 10) {
            out.append(contentsOf: [13, 10])
        }
        out.append(contentsOf: [UInt8(ascii: "."), 13, 10])
        return out
    }
}
