import Foundation

/// Bounces in neither DSN nor ARF form (Exim, qmail, Exchange, Google, Postfix text, …): read only when the
/// message looks like one (a mailer-daemon sender, a bounce subject, or bounce phrasing in its text), then
/// classified by the first status code in its text, else by phrases, else soft.
enum BounceHeuristics {
    /// Caps on the text read: UTF-8 bytes (four times as much of HTML, before its tags go) and lines.
    static let maximumText = 256 << 10
    static let maximumLines = 2000

    static let daemonSenders = ["mailer-daemon", "postmaster", "mail delivery subsystem", "mail delivery system"]
    static let bounceSubjects = [
        "undeliver", "delivery status notification", "mail delivery failed", "delivery failure", "failure notice",
        "returned mail", "delivery failed", "non-delivery", "nondeliverable", "non deliverable", "could not be delivered",
        "not delivered", "mail delivery system", "delivery problem", "failed delivery",
    ]
    static let bouncePhrases = [
        "this is the qmail-send program", "able to deliver", "returning message to sender", "could not be delivered",
        "couldn't be delivered", "delivery has failed", "delivery to the following recipient", "the following address(es) failed",
        "had permanent fatal errors", "was not delivered", "wasn't delivered", "undeliverable", "unable to deliver",
        "permanent error", "permanent failure", "delivery failed", "failed permanently", "message not delivered",
    ]
    static let vacationSubjects = [
        "out of office", "out of the office", "auto-reply", "autoreply", "auto reply", "automatic reply", "auto response",
        "autoresponse", "vacation", "away from", "automatische antwort", "abwesenheit", "réponse automatique",
        "respuesta automática", "risposta automatica", "automatisch antwoord", "autosvar",
    ]
    static let hardPhrases = [
        "user unknown", "unknown user", "no such user", "mailbox unavailable", "does not exist", "address rejected",
        "invalid recipient", "no mailbox here", "recipient not found", "unknown recipient", "no such recipient",
        "mailbox not found", "user not found", "address not found",
    ]
    static let softPhrases = [
        "mailbox full", "mailbox is full", "over quota", "quota exceeded", "exceeded storage", "insufficient storage",
        "temporarily", "try again later", "temporary failure", "temporary error",
    ]
    /// Lines from which on a bounce quotes the returned message.
    static let returnedMessageMarkers = [
        "copy of the message", "copy of your message", "original message headers", "original message -----",
        "original message follows",
    ]

    /// The report of a bounce-looking `message`; nil for auto-replies, delay or success notices, and anything
    /// else.
    static func report(_ message: MIMEPart) -> BounceReport? {
        let subject = MIMEDecoding.encodedWords(message.field("subject") ?? "")
        let lowerSubject = subject.lowercased()
        let from = MIMEDecoding.encodedWords(message.field("from") ?? "").lowercased()
        let lines = textLines(message)
        let fromDaemon = daemonSenders.contains { from.contains($0) }
        let bounceSubject = bounceSubjects.contains { lowerSubject.contains($0) }
        let phraseLine = lines.first { line in
            let line = line.lowercased()
            return bouncePhrases.contains { line.contains($0) }
        }
        // An auto-reply flagged as one is a bounce only when its sender or subject says so; one flagged only by
        // `Precedence: auto_reply` (or not at all) also when its text does.
        let autoSubmitted = message.field("auto-submitted")?.lowercased().hasPrefix("auto-replied") == true
        let autoReplyHeader = message.field("x-autoreply") != nil || message.field("x-autorespond") != nil
        let vacationSubject = lowerSubject.hasPrefix("auto:") || vacationSubjects.contains { lowerSubject.contains($0) }
        if (autoSubmitted || autoReplyHeader || vacationSubject) && !fromDaemon && !bounceSubject { return nil }
        guard fromDaemon || bounceSubject || phraseLine != nil else { return nil }
        let delayOrSuccess =
            lowerSubject.contains("delay") || lowerSubject.contains("(success)") || lowerSubject.contains("(relay)")
            || lowerSubject.hasPrefix("delivered:") || lowerSubject.hasPrefix("relayed:")
        if delayOrSuccess && !lowerSubject.contains("fail") { return nil }

        let recipient = failedRecipient(message, lines: lines)
        func report(_ kind: BounceReport.Kind, status: String? = nil, line: some StringProtocol) -> BounceReport {
            BounceReport(kind: kind, format: .heuristic, status: status, recipient: recipient, diagnostic: String(line))
        }
        for line in lines {
            if let status = BounceText.enhancedStatus(in: line), let kind = BounceText.kind(status: status, context: line) {
                return report(kind, status: status, line: line)
            }
        }
        for line in lines {
            if let code = BounceText.smtpCode(in: line) { return report(BounceText.kind(smtpCode: code, context: line), line: line) }
        }
        for line in lines {
            let lower = line.lowercased()
            let hard = hardPhrases.compactMap { lower.firstRange(of: $0)?.lowerBound }.min()
            let soft = softPhrases.compactMap { lower.firstRange(of: $0)?.lowerBound }.min()
            if let hard, soft.map({ hard < $0 }) ?? true { return report(.hard, line: line) }
            if soft != nil { return report(.soft, line: line) }
        }
        return report(.soft, line: phraseLine ?? "Subject: \(subject)")
    }

    /// The first `maximumLines` non-empty lines of the message's own text parts (not of a returned message), up
    /// to the first line where it quotes the returned message; HTML only when there is no plain text.
    static func textLines(_ message: MIMEPart) -> [Substring] {
        var plain: [MIMEPart] = []
        var html: [MIMEPart] = []
        func collect(_ part: MIMEPart) {
            if !part.parts.isEmpty {
                part.parts.forEach(collect)
            } else if part.embedded == nil, part.contentType.mediaType == "text/plain" {
                plain.append(part)
            } else if part.embedded == nil, part.contentType.mediaType == "text/html" {
                html.append(part)
            }
        }
        collect(message)
        var text = ""
        for part in plain.isEmpty ? html : plain {
            let charset = part.contentType.parameters["charset"]
            if part.contentType.mediaType == "text/html" {
                text += withoutTags(MIMEDecoding.text(part.decodedBody.prefix(4 * maximumText), charset: charset))
            } else {
                text += MIMEDecoding.text(part.decodedBody.prefix(maximumText), charset: charset)
            }
            text += "\n"
            if text.utf8.count > maximumText { break }
        }
        var lines: [Substring] = []
        for line in text.split(whereSeparator: \.isNewline) where lines.count < maximumLines {
            let trimmed = line.drop { $0.isWhitespace }
            guard !trimmed.isEmpty else { continue }
            let lower = trimmed.lowercased()
            if returnedMessageMarkers.contains(where: lower.contains) { break }
            lines.append(trimmed)
        }
        return lines
    }

    /// `X-Failed-Recipients`, else the first address in the text that is not one of the message's own
    /// (From, To, Return-Path, …) nor a mailer-daemon or postmaster.
    static func failedRecipient(_ message: MIMEPart, lines: [Substring]) -> String? {
        if let failed = message.field("x-failed-recipients").flatMap({ BounceText.addresses(in: $0).first }) { return failed }
        let ownFields = ["from", "to", "cc", "reply-to", "sender", "return-path", "delivered-to", "x-original-to", "envelope-to"]
        let own = Set(message.fields.filter { ownFields.contains($0.name) }.flatMap { BounceText.addresses(in: $0.value) })
        for line in lines {
            for address in BounceText.addresses(in: line) where !own.contains(address) {
                let local = address.prefix { $0 != "@" }
                if local != "mailer-daemon" && local != "postmaster" { return address }
            }
        }
        return nil
    }

    /// HTML as text: tags dropped (those that end a block become line breaks) and the common entities decoded.
    static func withoutTags(_ html: String) -> String {
        var out = ""
        var tag: String?
        for character in html {
            if var current = tag {
                if character == ">" {
                    let name = current.lowercased().drop { $0 == "/" }.prefix { $0.isLetter || $0.isNumber }
                    out += ["br", "p", "div", "tr", "li", "table", "h1", "h2", "h3", "h4"].contains(String(name)) ? "\n" : " "
                    tag = nil
                } else if current.count < 64 {
                    current.append(character)
                    tag = current
                }
            } else if character == "<" {
                tag = ""
            } else {
                out.append(character)
            }
        }
        for (entity, character) in [("&nbsp;", " "), ("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&amp;", "&")] {
            out = out.replacingOccurrences(of: entity, with: character)
        }
        return out
    }
}
