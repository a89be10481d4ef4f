/// What a bounce or complaint says about one recipient, as `BounceParser` reads it.
public struct BounceReport: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable { case hard, soft, complaint }

    /// Where the verdict came from: an RFC 3464 delivery status notification, an RFC 5965 feedback report, or
    /// the text of a bounce in neither format.
    public enum Format: String, Sendable, Equatable { case dsn, arf, heuristic }

    public var kind: Kind
    public var format: Format
    /// The enhanced status code (RFC 3463), e.g. "5.1.1", when one was found.
    public var status: String?
    /// The recipient the report is about (DSN Final-Recipient / Original-Recipient without the "rfc822;" type,
    /// ARF Original-Rcpt-To, or the address found in a non-standard bounce), lowercased; nil if none.
    public var recipient: String?
    /// One line (CR/LF/tabs folded to single spaces, trimmed, at most 1000 characters) explaining the failure:
    /// the DSN Diagnostic-Code (without its "smtp;" type prefix), else the Status and Action; for ARF
    /// "Feedback-Type: abuse" plus User-Agent if present; for heuristics the line that decided it.
    public var diagnostic: String

    /// A report with `recipient` lowercased (nil when empty) and `diagnostic` made one line as documented.
    public init(kind: Kind, format: Format, status: String? = nil, recipient: String? = nil, diagnostic: String) {
        self.kind = kind
        self.format = format
        self.status = status
        self.recipient = recipient.flatMap { $0.isEmpty ? nil : $0.lowercased() }
        self.diagnostic = Self.oneLine(diagnostic)
    }

    static let maximumDiagnosticLength = 1000

    /// `text` with each run of whitespace and control characters one space, trimmed, and cut to
    /// `maximumDiagnosticLength` characters.
    static func oneLine(_ text: String) -> String {
        var out = ""
        var pendingSpace = false
        var count = 0
        for character in text {
            if character.isWhitespace || character.unicodeScalars.allSatisfy({ $0.properties.generalCategory == .control }) {
                pendingSpace = !out.isEmpty
                continue
            }
            if pendingSpace {
                guard count + 1 < maximumDiagnosticLength else { break }
                out.append(" ")
                count += 1
                pendingSpace = false
            }
            out.append(character)
            count += 1
            if count == maximumDiagnosticLength { break }
        }
        return out
    }
}
