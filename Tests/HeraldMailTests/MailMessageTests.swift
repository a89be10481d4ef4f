import Foundation
import HeraldCore
import Testing

@testable import HeraldMail

@Suite struct MailMessageTests {
    func message(subject: String = "Hello", text: String = "Hi\nthere", html: String = "<p>Hi</p>", name: String? = "Ada") throws -> MailMessage {
        MailMessage(
            from: try Mailbox(parsing: "Herald <noreply@herald.test>"), to: try Mailbox(name: name, address: EmailAddress("ada@example.com")),
            replyTo: try Mailbox(parsing: "support@herald.test"), subject: subject, text: text, html: html,
            messageID: "<1.herald@herald.test>", date: Date(timeIntervalSince1970: 1_795_000_000))
    }

    func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var result: [ArraySlice<UInt8>] = []
        var start = 0
        for index in bytes.indices where bytes[index] == 10 {
            result.append(bytes[start..<index])
            start = index + 1
        }
        return result
    }

    @Test func usesCRLFOnlyAndShortLines() throws {
        let long = String(repeating: "word ", count: 600) + "\n" + String(repeating: "x", count: 3000)
        let bytes = try message(subject: String(repeating: "Long subject ", count: 20), text: long, html: long).encoded()
        for (index, byte) in bytes.enumerated() where byte == 10 { #expect(index > 0 && bytes[index - 1] == 13) }
        for (index, byte) in bytes.enumerated() where byte == 13 { #expect(index + 1 < bytes.count && bytes[index + 1] == 10) }
        #expect(lines(bytes).allSatisfy { $0.count <= 998 })
    }

    @Test func hasTheRequiredHeaders() throws {
        let text = String(decoding: try message().encoded(), as: UTF8.self)
        for header in [
            "From: \"Herald\" <noreply@herald.test>\r\n", "To: \"Ada\" <ada@example.com>\r\n", "Reply-To: support@herald.test\r\n",
            "Subject: Hello\r\n", "Message-ID: <1.herald@herald.test>\r\n", "Auto-Submitted: auto-generated\r\n", "MIME-Version: 1.0\r\n",
            "Date: Wed, 18 Nov 2026 ", "Content-Type: multipart/alternative; boundary=",
        ] {
            #expect(text.contains(header), "missing \(header)")
        }
        #expect(text.contains("Content-Type: text/plain; charset=utf-8"))
        #expect(text.contains("Content-Type: text/html; charset=utf-8"))
    }

    @Test func nonASCIISubjectIsEncodedAsUTF8Words() throws {
        let subject = "Zweryfikuj adres e-mail — zażółć gęślą jaźń, دسترسی به حساب کاربری خود را تأیید کنید"
        let text = String(decoding: try message(subject: subject).encoded(), as: UTF8.self)
        let headerBlock = text.components(separatedBy: "\r\n\r\n")[0]
        #expect(headerBlock.utf8.allSatisfy { $0 < 128 })
        let subjectLines = headerBlock.components(separatedBy: "\r\n").drop { !$0.hasPrefix("Subject:") }
            .prefix { $0.hasPrefix("Subject:") || $0.hasPrefix(" ") }
        #expect(subjectLines.allSatisfy { $0.count <= 78 })
        let decoded = subjectLines.map { line in
            line.replacingOccurrences(of: "Subject: ", with: "").trimmingCharacters(in: .whitespaces)
        }.map { word -> String in
            #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
            let payload = word.dropFirst(10).dropLast(2)
            return String(decoding: Data(base64Encoded: String(payload))!, as: UTF8.self)
        }.joined()
        #expect(decoded == subject)
    }

    @Test func nonASCIIDisplayNameIsEncoded() throws {
        let text = String(decoding: try message(name: "Łukasz Żółć").encoded(), as: UTF8.self)
        #expect(text.contains("To: =?UTF-8?B?\(Data("Łukasz Żółć".utf8).base64EncodedString())?= <ada@example.com>\r\n"))
    }

    @Test func headerInjectionIsRejected() throws {
        #expect(throws: HeraldError.self) { try message(subject: "Hi\r\nBcc: victim@example.com").encoded() }
        #expect(throws: HeraldError.self) { try Mailbox(name: "Eve\nBcc: victim@example.com", address: EmailAddress("e@example.com")) }
        var withExtra = try message()
        withExtra.extraHeaders = [("List-Unsubscribe", "<mailto:x@y.z>\r\nBcc: v@example.com")]
        #expect(throws: HeraldError.self) { try withExtra.encoded() }
    }

    @Test func quotedPrintableRoundTripsAndEscapesLeadingDots() {
        let original = "Line one\n.hidden dot line\nZażółć = equals  \ntrailing space \n" + String(repeating: "ab", count: 100)
        var out: [UInt8] = []
        BodyEncoding.quotedPrintable(original, into: &out)
        let encoded = String(decoding: out, as: UTF8.self)
        #expect(!encoded.components(separatedBy: "\r\n").contains { $0.hasPrefix(".") })
        #expect(encoded.components(separatedBy: "\r\n").allSatisfy { $0.utf8.count <= 76 })
        #expect(Self.decodeQuotedPrintable(encoded) == original.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n")
    }

    @Test func quotedPrintableWhereEveryByteIsEncodedAppendsAfterWhatIsThere() {
        for original in [String(repeating: "=", count: 1000), String(repeating: "ż", count: 700), String(repeating: "\n", count: 300), "= ", ""] {
            var out: [UInt8] = Array("before\r\n".utf8)
            BodyEncoding.quotedPrintable(original, into: &out)
            let encoded = String(decoding: out, as: UTF8.self)
            #expect(encoded.hasPrefix("before\r\n"))
            let body = String(encoded.dropFirst("before\r\n".count))
            #expect(body.components(separatedBy: "\r\n").allSatisfy { $0.utf8.count <= 76 })
            #expect(Self.decodeQuotedPrintable(body) == original.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n")
        }
    }

    @Test func mostlyNonASCIIBodiesUseBase64() {
        #expect(BodyEncoding.choose(for: "سلام دنیا، این یک آزمایش است") == .base64)
        #expect(BodyEncoding.choose(for: "Witaj Ado, kliknij ten link, aby potwierdzić swój adres e-mail w aplikacji.") == .quotedPrintable)
    }

    static func decodeQuotedPrintable(_ text: String) -> String {
        var bytes: [UInt8] = []
        let source = Array(text.utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "=") {
                if source[index + 1] == 13 {
                    index += 3
                    continue
                }
                bytes.append(UInt8(String(decoding: source[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)!)
                index += 3
            } else {
                bytes.append(source[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
