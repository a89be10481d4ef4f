import Foundation
import HeraldCore
import Testing

@testable import HeraldMail

/// libcurl against the repository's aiosmtpd capture server on a free loopback port.
@Suite(.serialized) struct CurlSMTPConnectionTests {
    func settings(_ server: CaptureSMTPServer, _ change: (inout SMTPSettings) -> Void = { _ in }) -> SMTPSettings {
        var configuration = HeraldConfiguration.SMTP()
        configuration.url = server.url
        configuration.timeout = 10
        configuration.connectTimeout = 5
        var settings = SMTPSettings(configuration)
        change(&settings)
        return settings
    }

    func message(_ n: Int, body: String = "Hello") -> [UInt8] {
        Array("From: a@herald.test\r\nTo: b@example.com\r\nSubject: \(n)\r\nMessage-ID: <\(n)@herald.test>\r\n\r\n\(body)\r\n".utf8)
    }

    @Test func manyMessagesShareOneConnection() throws {
        let server = try CaptureSMTPServer()
        let connection = try CurlSMTPConnection(settings: settings(server))
        for n in 1...25 {
            let result = connection.send(from: "a@herald.test", to: ["b\(n)@example.com"], message: message(n))
            #expect(result.outcome == .sent)
            #expect(result.replyCode == 250)
        }
        #expect(connection.connectionsOpened == 1)
        let received = try server.received()
        #expect(received.count == 25)
        #expect(Set(received.map(\.session)).count == 1)
        #expect(received.map { $0.recipients[0] } == (1...25).map { "b\($0)@example.com" })
    }

    @Test func bodyLineStartingWithDotArrivesIntact() throws {
        let server = try CaptureSMTPServer()
        let connection = try CurlSMTPConnection(settings: settings(server))
        let body = "first\r\n.hidden\r\n.\r\n..two dots\r\nlast"
        #expect(connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1, body: body)).outcome == .sent)
        let text = try server.received()[0].text
        #expect(text.hasSuffix("\r\n\r\n\(body)\r\n"))
    }

    @Test func permanentRejectionIsNotRetriable() throws {
        let server = try CaptureSMTPServer(["--script", "1:550:5.1.1 No such user"])
        let connection = try CurlSMTPConnection(settings: settings(server))
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .permanent)
        #expect(result.replyCode == 550)
        #expect(result.replyText.contains("No such user"))
        // The same handle goes on to deliver the next message.
        #expect(connection.send(from: "a@herald.test", to: ["c@example.com"], message: message(2)).outcome == .sent)
    }

    @Test func rejectedRecipientIsPermanent() throws {
        let server = try CaptureSMTPServer(["--script", "rcpt=nobody:550:5.1.1 Unknown recipient"])
        let connection = try CurlSMTPConnection(settings: settings(server))
        let result = connection.send(from: "a@herald.test", to: ["nobody@example.com"], message: message(1))
        #expect(result.outcome == .permanent)
        #expect(result.replyCode == 550)
    }

    @Test func temporaryFailureIsTransient() throws {
        let server = try CaptureSMTPServer(["--script", "1:451:4.3.0 Try again later"])
        let connection = try CurlSMTPConnection(settings: settings(server))
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .transient)
        #expect(result.replyCode == 451)
        #expect(result.replyText.contains("Try again later"))
    }

    @Test func droppedConnectionMidDataIsTheConnectionsFailureAndTheNextSendReconnects() throws {
        let server = try CaptureSMTPServer(["--script", "1:drop"])
        let connection = try CurlSMTPConnection(settings: settings(server))
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .connection)
        #expect(connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(2)).outcome == .sent)
        #expect(connection.connectionsOpened == 2)
    }

    @Test func stalledServerTimesOutAndTheNextMessageGetsAFreshConnection() throws {
        let server = try CaptureSMTPServer(["--script", "1:stall"])
        let connection = try CurlSMTPConnection(settings: settings(server) { $0.timeout = 1.5 })
        let started = Date()
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .connection)
        #expect(result.replyText.contains("curl error 28"))
        #expect(Date().timeIntervalSince(started) < 4)
        let next = Date()
        #expect(connection.send(from: "a@herald.test", to: ["c@example.com"], message: message(2)).outcome == .sent)
        #expect(Date().timeIntervalSince(next) < 1.5)
        #expect(connection.connectionsOpened == 2)
    }

    @Test func refusalsOfTheServerAreTheConnectionsNotTheMessages() throws {
        for (script, code) in [("greeting=554:5.3.2 Not accepting mail", 554), ("greeting=421:4.3.2 Busy", 421)] {
            let server = try CaptureSMTPServer(["--script", script])
            let connection = try CurlSMTPConnection(settings: settings(server))
            let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
            #expect(result.outcome == .connection, "\(script)")
            #expect(result.replyCode == code, "\(script)")
            #expect(result.replyText.hasPrefix("greeting refused: \(code)"), "\(script)")
        }
    }

    @Test func refusedConnectionIsTransient() throws {
        var configuration = HeraldConfiguration.SMTP()
        configuration.url = "smtp://127.0.0.1:1/herald.test"
        let connection = try CurlSMTPConnection(settings: SMTPSettings(configuration))
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .connection)
        #expect(result.replyCode == nil)
        #expect(result.replyText.contains("curl error 7"))
    }

    @Test func startTLSWithAuthDelivers() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (cert, key) = try CaptureSMTPServer.makeCertificate(in: directory)
        let server = try CaptureSMTPServer(["--tls", cert, key, "--require-starttls", "--auth", "alice:s3cret"])
        let good = try CurlSMTPConnection(
            settings: settings(server) {
                $0.requireStartTLS = true
                $0.caFile = cert
                $0.username = "alice"
                $0.password = "s3cret"
            })
        let result = good.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .sent)
        let received = try server.received()
        #expect(received.count == 1)
        #expect(received.first?.tls == true)
        #expect(received.first?.authUser == "alice")

        let wrong = try CurlSMTPConnection(
            settings: settings(server) {
                $0.requireStartTLS = true
                $0.insecure = true
                $0.username = "alice"
                $0.password = "wrong"
            })
        let denied = wrong.send(from: "a@herald.test", to: ["b@example.com"], message: message(2))
        #expect(denied.outcome == .connection)
        #expect(denied.replyCode == 535)
        #expect(denied.replyText.contains("authentication failed"))
        #expect(!denied.replyText.contains("wrong"))
        #expect(try server.received().count == 1)
    }

    @Test func plainTextIsRefusedWhenStartTLSIsRequiredButNotOffered() throws {
        let server = try CaptureSMTPServer()
        let connection = try CurlSMTPConnection(settings: settings(server) { $0.requireStartTLS = true })
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .connection)
        #expect(result.replyText.hasPrefix("TLS failed: the server does not offer STARTTLS"), "\(result.replyText)")
        #expect(try server.received().isEmpty)
    }
}
