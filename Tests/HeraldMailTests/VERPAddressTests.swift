import Crypto
import Foundation
import HeraldTesting
import Testing

@testable import HeraldMail

@Suite struct VERPAddressTests {
    let key = SymmetricKey(data: [UInt8](repeating: 7, count: 32))
    var verp: VERPAddress { VERPAddress(localPart: "bounces", domain: "herald.test", key: key) }

    @Test func addressCarriesTheIDAndTheFirst16HexDigitsOfItsHMAC() {
        let code = HMAC<SHA256>.authenticationCode(for: Array("herald-verp:42".utf8), using: key)
        let mac = code.prefix(8).map { String(format: "%02x", $0) }.joined()
        #expect(verp.address(for: 42) == "bounces+42-\(mac)@herald.test")
        #expect(verp.localPart == "bounces" && verp.domain == "herald.test")
    }

    @Test func outboxIDReadsBackTheIDAndToleratesBracketsAndWhitespace() {
        let address = verp.address(for: 1_234_567_890_123)
        #expect(verp.outboxID(in: address) == 1_234_567_890_123)
        #expect(verp.outboxID(in: "  <\(address)>\r\n") == 1_234_567_890_123)
        #expect(verp.outboxID(in: verp.address(for: 0)) == 0)
    }

    @Test func upperCasedAddressIsAccepted() {
        #expect(verp.outboxID(in: verp.address(for: 42).uppercased()) == 42)
        let mixed = VERPAddress(localPart: "Bounces", domain: "Herald.Test", key: key)
        #expect(mixed.outboxID(in: verp.address(for: 42)) == 42)
    }

    @Test func addressWithAWrongMACAnotherKeyOrAnotherDomainIsRejected() {
        let address = verp.address(for: 42)
        #expect(verp.outboxID(in: address.replacingOccurrences(of: "+42-", with: "+43-")) == nil)
        var flipped = Array(address.utf8)
        let macIndex = "bounces+42-".utf8.count
        flipped[macIndex] = flipped[macIndex] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        #expect(verp.outboxID(in: String(decoding: flipped, as: UTF8.self)) == nil)
        let otherKey = VERPAddress(localPart: "bounces", domain: "herald.test", key: SymmetricKey(size: .bits256))
        #expect(otherKey.outboxID(in: address) == nil)
        #expect(verp.outboxID(in: address.replacingOccurrences(of: "@herald.test", with: "@herald.test.example")) == nil)
        #expect(verp.outboxID(in: "x" + address) == nil)
        #expect(verp.outboxID(in: address + "x") == nil)
        #expect(verp.outboxID(in: "bounces+99999999999999999999-0123456789abcdef@herald.test") == nil)
        #expect(verp.outboxID(in: "") == nil && verp.outboxID(in: "bounces+") == nil)
    }

    @Test func outboxIDsFindsAddressesInHeadersAndBodyInOrderOnceEachAndSkipsBadMACs() {
        let forged = verp.address(for: 5).replacingOccurrences(of: "+5-", with: "+6-")
        let message = crlfMessage(
            """
            Return-Path: <\(verp.address(for: 7))>
            To: \(forged)
            Subject: hi

            Sent by \(verp.address(for: 3)), not by x\(verp.address(for: 4)) nor \(verp.address(for: 8)).example.
            Again: \(verp.address(for: 7).uppercased()).
            """)
        #expect(verp.outboxIDs(in: message) == [7, 3])
    }

    @Test func outboxIDsFindsAnAddressInABase64EncodedReturnedMessage() {
        let returned = crlfMessage(
            """
            Return-Path: <\(verp.address(for: 77))>
            From: Herald <noreply@herald.test>
            To: ada@example.com
            Subject: Confirm your email

            Hello
            """)
        let encoded = Data(returned).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed])
        let message = crlfMessage(
            """
            From: MAILER-DAEMON@mx.example.com
            Subject: Undelivered Mail Returned to Sender
            Content-Type: multipart/report; report-type=delivery-status; boundary=b

            --b
            Content-Type: text/plain

            Sorry.
            --b
            Content-Type: message/rfc822
            Content-Transfer-Encoding: base64

            \(encoded)
            --b--
            """)
        #expect(!String(decoding: message, as: UTF8.self).contains("bounces+"))
        #expect(verp.outboxIDs(in: message) == [77])
    }

    @Test func outboxIDsFindsAnAddressSplitByAQuotedPrintableSoftLineBreak() {
        let address = verp.address(for: 9).replacingOccurrences(of: "@", with: "=40")
        let split = address.index(address.startIndex, offsetBy: 14)
        let message = crlfMessage(
            """
            From: postmaster@example.com
            Subject: Undeliverable
            Content-Type: multipart/mixed; boundary="=_outer"

            --=_outer
            Content-Type: multipart/alternative; boundary="=_inner"

            --=_inner
            Content-Type: text/plain; charset=iso-8859-1
            Content-Transfer-Encoding: Quoted-Printable

            Your message from \(address[..<split])=
            \(address[split...]) could not be delivered.
            --=_inner--
            --=_outer--
            """)
        #expect(verp.outboxIDs(in: message) == [9])
    }

    @Test func outboxIDsOfGarbageIsEmpty() {
        var generator = SplitMix64(seed: 3)
        let garbage = (0..<100_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        #expect(verp.outboxIDs(in: garbage).isEmpty)
        #expect(verp.outboxIDs(in: []).isEmpty)
        #expect(verp.outboxIDs(in: Array("bounces+1-".utf8)).isEmpty)
    }
}
