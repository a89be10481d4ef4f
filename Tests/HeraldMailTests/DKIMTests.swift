import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldMail

@Suite struct DKIMTests {
    func relaxedHeaders(_ text: String) -> String {
        let (fields, _) = DKIMCanonicalization.split(Array((text + "\r\n").utf8))
        var out: [UInt8] = []
        for field in fields {
            DKIMCanonicalization.header(name: field.name.utf8, value: field.value, into: &out)
            out.append(contentsOf: [13, 10])
        }
        return String(decoding: out, as: UTF8.self)
    }

    func relaxedBody(_ text: String) -> String {
        String(decoding: DKIMCanonicalization.body(ArraySlice(text.utf8)), as: UTF8.self)
    }

    @Test func relaxedCanonicalizationMatchesTheRFCsExample() {
        // RFC 6376 §3.4.5.
        #expect(relaxedHeaders("A: X\r\nB : Y\t\r\n\tZ  \r\n") == "a:X\r\nb:Y Z\r\n")
        #expect(relaxedBody(" C \r\nD \t E\r\n\r\n\r\n") == " C\r\nD E\r\n")
    }

    @Test func relaxedBodyOfNothingOrBlankLinesIsEmptyAndALastLineGetsItsCRLF() {
        #expect(relaxedBody("") == "")
        #expect(relaxedBody("\r\n \r\n\t\r\n") == "")
        #expect(relaxedBody("a  b") == "a b\r\n")
        #expect(relaxedBody("a\r\n\r\nb\r\n") == "a\r\n\r\nb\r\n")
    }

    @Test func splitFindsTheBodyAfterTheEmptyLineAndKeepsFoldedValuesWhole() {
        let message = Array("Subject: one\r\n two\r\nTo: x@y\r\n\r\nbody\r\n".utf8)
        let (fields, body) = DKIMCanonicalization.split(message)
        #expect(fields.map(\.name) == ["subject", "to"])
        #expect(String(decoding: fields[0].value, as: UTF8.self) == " one\r\n two")
        #expect(String(decoding: message[body...], as: UTF8.self) == "body\r\n")
    }

    @Test func eachKeySignsTheCanonicalHeadersWithItsAlgorithm() throws {
        let rsa = try DKIMKey.generate(.rsa, selector: "s1")
        let ed = try DKIMKey.generate(.ed25519, selector: "s2")
        let message = MailMessage(
            from: try Mailbox(parsing: "Herald <noreply@herald.test>"), to: try Mailbox(name: nil, address: EmailAddress("ada@example.com")),
            subject: "Hello", text: "Hi", html: "<p>Hi</p>", messageID: "<1.herald@herald.test>", date: Date(timeIntervalSince1970: 1_795_000_000))
        let signed = try DKIMSigner(domain: "herald.test", keys: [rsa, ed]).sign(try message.encoded(), at: message.date)
        let (fields, _) = DKIMCanonicalization.split(signed)
        let signatures = fields.filter { $0.name == "dkim-signature" }
        #expect(signatures.count == 2)
        for (field, key) in zip(signatures, [rsa, ed]) {
            let value = String(decoding: field.value, as: UTF8.self).filter { !$0.isWhitespace }
            #expect(value.contains("a=\(key.algorithm == .rsa ? "rsa-sha256" : "ed25519-sha256")"))
            #expect(value.contains("s=\(key.selector);") && value.contains("d=herald.test;") && value.contains("t=1795000000;"))
            #expect(value.contains("h=from:to:subject:date:message-id:mime-version:content-type:auto-submitted:from;"))
        }
        #expect(try message.encoded() == Array(signed.suffix(try message.encoded().count)))
    }

    @Test func aKeyFileOfTheWrongKindIsRefusedNamingTheFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dkim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("ed.pem").path
        try DKIMKey.generate(.ed25519, selector: "s").pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try DKIMKey(pemFile: path, algorithm: .ed25519, selector: "s").algorithm == .ed25519)
        let error = try #require(throws: HeraldError.self) { try DKIMKey(pemFile: path, algorithm: .rsa, selector: "s") }
        #expect(error.code == .invalidConfiguration && error.detail.contains(path) && error.detail.contains("RSA"))
    }
}
