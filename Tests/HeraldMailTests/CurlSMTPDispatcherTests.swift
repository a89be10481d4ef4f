import Foundation
import HeraldCore
import Testing

@testable import HeraldMail

/// One lane of the dispatcher, used as a blocking connection: start, then poll until the send finishes.
final class OneConnection {
    let dispatcher: CurlSMTPDispatcher

    init(settings: SMTPSettings) throws { dispatcher = try CurlSMTPDispatcher(settings: settings, lanes: 1) }

    func send(from sender: String, to recipients: [String], message: [UInt8]) -> DeliveryResult {
        dispatcher.start(lane: 0, from: sender, to: recipients, message: message)
        while true {
            if let (_, result) = dispatcher.poll(timeout: 1).first { return result }
        }
    }

    var connectionsOpened: Int { dispatcher.connectionsOpened }
}

/// The dispatcher against the repository's aiosmtpd capture server on a free loopback port, which
/// advertises PIPELINING unless told not to.
@Suite(.serialized) struct CurlSMTPDispatcherTests {
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

    @Test(arguments: [true, false]) func manyMessagesShareOneConnection(pipelining: Bool) throws {
        let server = try CaptureSMTPServer(pipelining ? [] : ["--no-pipelining"])
        let connection = try OneConnection(settings: settings(server))
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

    /// Keeps two messages in flight on one lane (`depth`) until `count` have finished; returns their results in order.
    func sendTwoAtATime(_ dispatcher: CurlSMTPDispatcher, count: Int, recipient: (Int) -> String) -> [DeliveryResult] {
        var results: [DeliveryResult] = []
        var started = 0
        while results.count < count {
            while started < count && started - results.count < dispatcher.depth {
                started += 1
                dispatcher.start(lane: 0, from: "a@herald.test", to: [recipient(started)], message: message(started))
            }
            for (lane, result) in dispatcher.poll(timeout: 1) {
                #expect(lane == 0)
                results.append(result)
            }
        }
        return results
    }

    @Test(arguments: [true, false]) func aLaneCarriesTwoMessagesAtOnceAndTheyFinishInOrder(pipelining: Bool) throws {
        let server = try CaptureSMTPServer(pipelining ? [] : ["--no-pipelining"])
        let dispatcher = try CurlSMTPDispatcher(settings: settings(server), lanes: 1)
        #expect(dispatcher.depth == 2)
        let results = sendTwoAtATime(dispatcher, count: 30) { "b\($0)@example.com" }
        #expect(results.map(\.outcome) == Array(repeating: .sent, count: 30))
        #expect(dispatcher.connectionsOpened == 1)
        let received = try server.received()
        #expect(received.map { $0.recipients[0] } == (1...30).map { "b\($0)@example.com" })
        #expect(received.map(\.text).allSatisfy { $0.contains("Subject: ") })
        dispatcher.close()
    }

    @Test func theMessageBehindARefusedOneGoesOnAFreshConnection() throws {
        // The first content is refused after the second message's commands went out behind it.
        let server = try CaptureSMTPServer(["--script", "1:550:5.7.1 Content rejected"])
        let dispatcher = try CurlSMTPDispatcher(settings: settings(server), lanes: 1)
        let results = sendTwoAtATime(dispatcher, count: 3) { "m\($0)@example.com" }
        #expect(results.map(\.outcome) == [.permanent, .sent, .sent])
        #expect(results[0].replyText == "550 5.7.1 Content rejected")
        #expect(try server.received().map { $0.recipients[0] } == ["m2@example.com", "m3@example.com"])
        #expect(dispatcher.connectionsOpened == 2)
        dispatcher.close()
    }

    @Test func aBrokenConnectionFailsTheMessageBehindItUnsent() throws {
        let server = try CaptureSMTPServer(["--script", "mail@1=drop"])
        let dispatcher = try CurlSMTPDispatcher(settings: settings(server), lanes: 1)
        let results = sendTwoAtATime(dispatcher, count: 2) { "m\($0)@example.com" }
        #expect(results.map(\.outcome) == [.connection, .unsent])
        #expect(results[1].replyText.hasPrefix("not sent: "), "\(results[1].replyText)")
        #expect(try server.received().isEmpty)
        // Both go again on a fresh connection, once each.
        let again = sendTwoAtATime(dispatcher, count: 2) { "m\($0)@example.com" }
        #expect(again.map(\.outcome) == [.sent, .sent])
        #expect(try server.received().map { $0.recipients[0] } == ["m1@example.com", "m2@example.com"])
        dispatcher.close()
    }

    @Test func bodyLineStartingWithDotArrivesIntact() throws {
        let server = try CaptureSMTPServer()
        let connection = try OneConnection(settings: settings(server))
        let body = "first\r\n.hidden\r\n.\r\n..two dots\r\nlast"
        #expect(connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1, body: body)).outcome == .sent)
        let text = try server.received()[0].text
        #expect(text.hasSuffix("\r\n\r\n\(body)\r\n"))
    }

    @Test(arguments: [true, false]) func permanentRejectionIsNotRetriable(pipelining: Bool) throws {
        let server = try CaptureSMTPServer(["--script", "1:550:5.1.1 No such user"] + (pipelining ? [] : ["--no-pipelining"]))
        let connection = try OneConnection(settings: settings(server))
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .permanent)
        #expect(result.replyCode == 550)
        #expect(result.replyText.contains("No such user"))
        // The same handle goes on to deliver the next message.
        #expect(connection.send(from: "a@herald.test", to: ["c@example.com"], message: message(2)).outcome == .sent)
    }

    @Test(arguments: [true, false]) func rejectedRecipientIsPermanent(pipelining: Bool) throws {
        let server = try CaptureSMTPServer(["--script", "rcpt=nobody:550:5.1.1 Unknown recipient"] + (pipelining ? [] : ["--no-pipelining"]))
        let connection = try OneConnection(settings: settings(server))
        let result = connection.send(from: "a@herald.test", to: ["nobody@example.com"], message: message(1))
        #expect(result.outcome == .permanent)
        #expect(result.replyCode == 550)
        #expect(result.replyText == "550 5.1.1 Unknown recipient")
        // The pipelined DATA's refusal (no valid recipient) is not what the ledger keeps; the next message goes.
        #expect(connection.send(from: "a@herald.test", to: ["ada@example.com"], message: message(2)).outcome == .sent)
        #expect(try server.received().map { $0.recipients } == [["ada@example.com"]])
    }

    @Test func aConnectionTheServerClosedWhileIdleIsReopenedAndTheMessageSentOnce() throws {
        let server = try CaptureSMTPServer(["--script", "idle=0.3"])
        let connection = try OneConnection(settings: settings(server))
        #expect(connection.send(from: "a@herald.test", to: ["b1@example.com"], message: message(1)).outcome == .sent)
        Thread.sleep(forTimeInterval: 0.8)  // the server says 421 and closes
        let result = connection.send(from: "a@herald.test", to: ["b2@example.com"], message: message(2))
        #expect(result.outcome == .sent, "\(result.replyText)")
        #expect(connection.connectionsOpened == 2)
        #expect(try server.received().map { $0.recipients[0] } == ["b1@example.com", "b2@example.com"])
    }

    @Test func aStalledConnectionHoldsNoOther() throws {
        // The first message's final dot is never answered; the other connection goes on meanwhile.
        let server = try CaptureSMTPServer(["--script", "1:stall"])
        let dispatcher = try CurlSMTPDispatcher(
            settings: settings(server) {
                $0.timeout = 3
                $0.dataTimeout = 3
            }, lanes: 2)
        func finish(_ lane: Int) -> DeliveryResult {
            while true {
                if let (done, result) = dispatcher.poll(timeout: 1).first {
                    #expect(done == lane, "\(result.replyText)")
                    return result
                }
            }
        }
        let stalledAt = Date()
        dispatcher.start(lane: 1, from: "a@herald.test", to: ["stalled@example.com"], message: message(1))
        // Its message reaches the server (and gets no answer) before any other.
        while Date().timeIntervalSince(stalledAt) < 0.5 { #expect(dispatcher.poll(timeout: 0.1).isEmpty) }
        for n in 2...7 {
            dispatcher.start(lane: 0, from: "a@herald.test", to: ["m\(n)@example.com"], message: message(n))
            #expect(finish(0).outcome == .sent)
        }
        #expect(Date().timeIntervalSince(stalledAt) < 2)
        let stalled = finish(1)
        #expect(stalled.outcome == .possiblyDelivered)
        #expect(
            stalled.replyText.hasPrefix("possibly delivered: timed out after 3 s waiting for the reply to the end of data"),
            "\(stalled.replyText)")
        #expect(try server.received().map { $0.recipients[0] } == (2...7).map { "m\($0)@example.com" })
        dispatcher.close()
    }

    @Test func temporaryFailureIsTransient() throws {
        let server = try CaptureSMTPServer(["--script", "1:451:4.3.0 Try again later"])
        let connection = try OneConnection(settings: settings(server))
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .transient)
        #expect(result.replyCode == 451)
        #expect(result.replyText.contains("Try again later"))
    }

    @Test(arguments: [true, false]) func droppedConnectionBeforeTheFinalDotIsTheConnectionsFailureAndTheNextSendReconnects(
        pipelining: Bool
    ) throws {
        let server = try CaptureSMTPServer(["--script", "mail@1=drop"] + (pipelining ? [] : ["--no-pipelining"]))
        let connection = try OneConnection(settings: settings(server))
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .connection, "\(result.replyText)")
        #expect(connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(2)).outcome == .sent)
        #expect(connection.connectionsOpened == 2)
    }

    @Test(arguments: [true, false]) func droppedConnectionAfterTheFinalDotLeavesTheMessagePossiblyDelivered(pipelining: Bool) throws {
        // The server drops the connection once the message's content, final dot included, has arrived.
        let server = try CaptureSMTPServer(["--script", "1:drop"] + (pipelining ? [] : ["--no-pipelining"]))
        let connection = try OneConnection(settings: settings(server))
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .possiblyDelivered)
        #expect(result.replyCode == nil)
        #expect(result.replyText.hasPrefix("possibly delivered: "), "\(result.replyText)")
        #expect(result.replyText.contains(" after the end of data (last reply: 354"), "\(result.replyText)")
        #expect(connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(2)).outcome == .sent)
        #expect(connection.connectionsOpened == 2)
    }

    @Test func aCutAfterTheFinalDotFailsTheMessageBehindItUnsent() throws {
        // Pipelining: the second message's commands went out behind the first one's final dot, but it had no 354.
        let server = try CaptureSMTPServer(["--script", "1:drop"])
        let dispatcher = try CurlSMTPDispatcher(settings: settings(server), lanes: 1)
        let results = sendTwoAtATime(dispatcher, count: 2) { "m\($0)@example.com" }
        #expect(results.map(\.outcome) == [.possiblyDelivered, .unsent])
        #expect(results[1].replyText.hasPrefix("not sent: possibly delivered: "), "\(results[1].replyText)")
        dispatcher.close()
    }

    @Test(arguments: [true, false]) func noReplyToTheFinalDotInTimeLeavesTheMessagePossiblyDelivered(pipelining: Bool) throws {
        // The relay takes the message at its final dot and answers 3 s later; the final dot's own timeout is 1 s.
        let server = try CaptureSMTPServer(["--script", "1:late=3"] + (pipelining ? [] : ["--no-pipelining"]))
        let connection = try OneConnection(
            settings: settings(server) {
                $0.timeout = 10
                $0.dataTimeout = 1
            })
        let started = Date()
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .possiblyDelivered)
        #expect(result.replyCode == nil)
        #expect(
            result.replyText.hasPrefix("possibly delivered: timed out after 1 s waiting for the reply to the end of data"),
            "\(result.replyText)")
        #expect(Date().timeIntervalSince(started) < 2.5)
        // The relay has it: sending it again would deliver a second copy (RFC 1047).
        #expect(try server.received().map { $0.recipients } == [["b@example.com"]])
    }

    @Test(arguments: [true, false]) func noReplyBeforeTheFinalDotInTimeIsTheConnectionsFailure(pipelining: Bool) throws {
        // The relay never answers MAIL FROM: nothing of the message went, whatever the final dot's timeout.
        let server = try CaptureSMTPServer(["--script", "mail@1=stall"] + (pipelining ? [] : ["--no-pipelining"]))
        let connection = try OneConnection(
            settings: settings(server) {
                $0.timeout = 1
                $0.dataTimeout = 30
            })
        let started = Date()
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .connection)
        #expect(result.replyText.hasPrefix("timed out after 1 s waiting for the reply to MAIL FROM"), "\(result.replyText)")
        #expect(Date().timeIntervalSince(started) < 2.5)
        #expect(try server.received().isEmpty)
    }

    @Test func theReplyToTheFinalDotHasItsOwnTimeout() throws {
        // A relay slower at the final dot than smtp.timeout allows, within smtp.dataTimeout: sent, once.
        let server = try CaptureSMTPServer(["--script", "*:late=2"])
        let connection = try OneConnection(
            settings: settings(server) {
                $0.timeout = 1
                $0.dataTimeout = 5
            })
        for n in 1...2 {
            let result = connection.send(from: "a@herald.test", to: ["b\(n)@example.com"], message: message(n))
            #expect(result.outcome == .sent, "\(result.replyText)")
        }
        #expect(connection.connectionsOpened == 1)
        #expect(try server.received().map { $0.recipients[0] } == ["b1@example.com", "b2@example.com"])
    }

    @Test func stalledServerTimesOutAndTheNextMessageGetsAFreshConnection() throws {
        let server = try CaptureSMTPServer(["--script", "mail@1=stall"])
        let connection = try OneConnection(settings: settings(server) { $0.timeout = 1.5 })
        let started = Date()
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .connection)
        #expect(result.replyText.hasPrefix("timed out after 1.5 s waiting for the reply to MAIL FROM"), "\(result.replyText)")
        #expect(Date().timeIntervalSince(started) < 4)
        let next = Date()
        #expect(connection.send(from: "a@herald.test", to: ["c@example.com"], message: message(2)).outcome == .sent)
        #expect(Date().timeIntervalSince(next) < 1.5)
        #expect(connection.connectionsOpened == 2)
    }

    @Test func refusalsOfTheServerAreTheConnectionsNotTheMessages() throws {
        for (script, code) in [("greeting=554:5.3.2 Not accepting mail", 554), ("greeting=421:4.3.2 Busy", 421)] {
            let server = try CaptureSMTPServer(["--script", script])
            let connection = try OneConnection(settings: settings(server))
            let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
            #expect(result.outcome == .connection, "\(script)")
            #expect(result.replyCode == code, "\(script)")
            #expect(result.replyText.hasPrefix("greeting refused: \(code)"), "\(script)")
        }
    }

    @Test func refusedConnectionIsTransient() throws {
        var configuration = HeraldConfiguration.SMTP()
        configuration.url = "smtp://127.0.0.1:1/herald.test"
        let connection = try OneConnection(settings: SMTPSettings(configuration))
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
        let good = try OneConnection(
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

        let wrong = try OneConnection(
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
        let connection = try OneConnection(settings: settings(server) { $0.requireStartTLS = true })
        let result = connection.send(from: "a@herald.test", to: ["b@example.com"], message: message(1))
        #expect(result.outcome == .connection)
        #expect(result.replyText.hasPrefix("TLS failed: the server does not offer STARTTLS"), "\(result.replyText)")
        #expect(try server.received().isEmpty)
    }
}

/// Replies as they arrive in pieces, and the data block's dot-stuffing.
@Suite struct SMTPWireTests {
    func feed(_ reader: inout SMTPReplyReader, _ text: String) {
        Array(text.utf8).withUnsafeBytes { reader.append($0) }
    }

    @Test func aReplyIsWholeOnlyOnceItsLastLineArrives() {
        var reader = SMTPReplyReader()
        feed(&reader, "250-first\r\n250-sec")
        #expect(reader.next() == nil)
        feed(&reader, "ond\r\n250 last line\r\n354 go ahead\r")
        #expect(reader.next().map { "\($0.code) \($0.line)" } == "250 250 last line")
        #expect(reader.next() == nil)
        feed(&reader, "\n421\r\n")
        #expect(reader.next()?.code == 354)
        #expect(reader.next().map { "\($0.code) \($0.line)" } == "421 421")
        // A final line with something other than a space after its code still ends the reply.
        feed(&reader, "550\tno\r\nnonsense\n")
        #expect(reader.next()?.code == 550)
        #expect(reader.next()?.code == 0)
    }

    @Test func linesStartingWithADotGetAnotherAndTheEndOfDataFollows() {
        let block = { (text: String) in String(decoding: SMTPData.block(Array(text.utf8)), as: UTF8.self) }
        #expect(block(".a\r\nb\r\n.\r\n..c\r\n") == "..a\r\nb\r\n..\r\n...c\r\n.\r\n")
        #expect(block("no line end") == "no line end\r\n.\r\n")
        #expect(block("") == "\r\n.\r\n")
        #expect(block("x.\r\n.y") == "x.\r\n..y\r\n.\r\n")
    }
}
