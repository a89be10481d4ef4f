import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldInbound

@Suite(.timeLimit(.minutes(1)))
struct MailListenerTests {
    @Test func lmtpAnswersEachRecipientAfterDataInOrder() async throws {
        let inbox = Inbox { delivery in
            delivery.recipients.map { $0.hasPrefix("known") ? .accepted : .rejected("5.1.1 unknown user") }
        }
        try await withListener(.lmtp, inbox: inbox) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.expect("220 mx.herald.test LMTP Herald")
                try await client.expect(
                    "250-mx.herald.test\n250-PIPELINING\n250-8BITMIME\n250-ENHANCEDSTATUSCODES\n250 SIZE 10485760",
                    after: "LHLO postfix.test")
                try await client.expect("250 2.1.0 Ok", after: "MAIL FROM:<mailer-daemon@postfix.test>")
                try await client.expect("250 2.1.5 Ok", after: "RCPT TO:<known@herald.test>")
                try await client.expect("250 2.1.5 Ok", after: "RCPT TO:<stranger@herald.test>")
                try await client.expect("354 End data with <CR><LF>.<CR><LF>", after: "DATA")
                try await client.send("Subject: bounce\r\n\r\nbody\r\n.\r\n")
                try await client.expect("250 2.0.0 Ok")
                try await client.expect("550 5.1.1 unknown user")
                try await client.expect("221 2.0.0 mx.herald.test closing connection", after: "QUIT")
                try await client.expectClosed()
            }
        }
        let delivery = try #require(inbox.deliveries.first)
        #expect(inbox.deliveries.count == 1)
        #expect(delivery.sender == "mailer-daemon@postfix.test")
        #expect(delivery.recipients == ["known@herald.test", "stranger@herald.test"])
        #expect(delivery.data == Array("Subject: bounce\r\n\r\nbody\r\n".utf8))
    }

    @Test func smtpAnswersDataOnceWithTheFirstRefusal() async throws {
        let inbox = Inbox { delivery in
            delivery.recipients.map { $0.hasPrefix("full") ? .deferred("4.2.2 mailbox full") : .accepted }
        }
        try await withListener(.smtp, inbox: inbox) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.expect("220 mx.herald.test ESMTP Herald")
                try await client.expect("500 5.5.2 Error: command not recognized", after: "LHLO postfix.test")
                try await client.expect("250 mx.herald.test", after: "HELO postfix.test")
                try await client.expect(
                    "250-mx.herald.test\n250-PIPELINING\n250-8BITMIME\n250-ENHANCEDSTATUSCODES\n250 SIZE 10485760",
                    after: "EHLO postfix.test")
                try await client.expect("250 2.0.0 Ok", after: "NOOP")
                try await client.expect(
                    "252 2.5.2 Cannot VRFY user, but will accept message and attempt delivery", after: "VRFY someone")
                try await client.expect("250 2.1.0 Ok", after: "MAIL FROM: <sender@postfix.test> BODY=8BITMIME")
                try await client.expect("250 2.1.5 Ok", after: "RCPT TO:<a@herald.test>")
                try await client.expect("354 End data with <CR><LF>.<CR><LF>", after: "DATA")
                try await client.send("one\r\n.\r\n")
                try await client.expect("250 2.0.0 Ok: queued")
                try await client.expect("250 2.1.0 Ok", after: "MAIL FROM:<sender@postfix.test>")
                try await client.expect("250 2.1.5 Ok", after: "RCPT TO:<a@herald.test>")
                try await client.expect("250 2.1.5 Ok", after: "RCPT TO:<full@herald.test>")
                try await client.expect("354 End data with <CR><LF>.<CR><LF>", after: "DATA")
                try await client.send("two\r\n.\r\n")
                try await client.expect("451 4.2.2 mailbox full")
                try await client.expect("221 2.0.0 mx.herald.test closing connection", after: "QUIT")
                try await client.expectClosed()
            }
        }
        #expect(inbox.deliveries.map(\.recipients) == [["a@herald.test"], ["a@herald.test", "full@herald.test"]])
    }

    @Test func nullSenderWithParametersIsAccepted() async throws {
        let inbox = Inbox()
        try await withListener(.lmtp, inbox: inbox) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.greet()
                try await client.expect("250 2.1.0 Ok", after: "MAIL FROM:<> SIZE=120 BODY=8BITMIME")
                try await client.expect("250 2.1.5 Ok", after: "RCPT TO:<bounces+42@herald.test>")
                try await client.expect("354 End data with <CR><LF>.<CR><LF>", after: "DATA")
                try await client.send("bounce\r\n.\r\n")
                try await client.expect("250 2.0.0 Ok")
            }
        }
        #expect(inbox.deliveries.map(\.sender) == [""])
        #expect(inbox.deliveries.map(\.recipients) == [["bounces+42@herald.test"]])
    }

    @Test func dotsAreUnstuffedAndBareLineFeedsAccepted() async throws {
        let inbox = Inbox()
        try await withListener(.lmtp, inbox: inbox) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.greet()
                try await client.send("MAIL FROM:<>\nRCPT TO:<a@herald.test>\nDATA\n")
                try await client.expect("250 2.1.0 Ok")
                try await client.expect("250 2.1.5 Ok")
                try await client.expect("354 End data with <CR><LF>.<CR><LF>")
                try await client.send("..leading dot\n...\r\nplain\n.x\n\n.\n")
                try await client.expect("250 2.0.0 Ok")
            }
        }
        #expect(inbox.deliveries.map(\.data) == [Array(".leading dot\r\n..\r\nplain\r\nx\r\n\r\n".utf8)])
    }

    @Test func pipelinedCommandsInOneWriteAreAnsweredInOrder() async throws {
        let inbox = Inbox { delivery in delivery.recipients.map { _ in .accepted } }
        try await withListener(.lmtp, inbox: inbox) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.send(
                    "LHLO postfix.test\r\nMAIL FROM:<>\r\nRCPT TO:<a@herald.test>\r\nRCPT TO:<b@herald.test>\r\nDATA\r\n"
                        + "first\r\n.\r\nMAIL FROM:<>\r\nRCPT TO:<c@herald.test>\r\nDATA\r\nsecond\r\n.\r\nQUIT\r\n")
                try await client.expect("220 mx.herald.test LMTP Herald")
                try await client.expect(
                    "250-mx.herald.test\n250-PIPELINING\n250-8BITMIME\n250-ENHANCEDSTATUSCODES\n250 SIZE 10485760")
                for reply in ["250 2.1.0 Ok", "250 2.1.5 Ok", "250 2.1.5 Ok", "354 End data with <CR><LF>.<CR><LF>"] {
                    try await client.expect(reply)
                }
                try await client.expect("250 2.0.0 Ok")
                try await client.expect("250 2.0.0 Ok")
                for reply in ["250 2.1.0 Ok", "250 2.1.5 Ok", "354 End data with <CR><LF>.<CR><LF>", "250 2.0.0 Ok"] {
                    try await client.expect(reply)
                }
                try await client.expect("221 2.0.0 mx.herald.test closing connection")
                try await client.expectClosed()
            }
        }
        #expect(inbox.deliveries.map(\.data) == [Array("first\r\n".utf8), Array("second\r\n".utf8)])
    }

    @Test func oversizedMessageIsRefusedPerRecipientAndNotDelivered() async throws {
        let inbox = Inbox()
        try await withListener(.lmtp, maximumMessageSize: 1_000, inbox: inbox) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.greet(size: 1_000)
                try await client.expect("552 5.3.4 Message size exceeds fixed limit", after: "MAIL FROM:<> SIZE=5000")
                try await client.send("MAIL FROM:<>\r\nRCPT TO:<a@herald.test>\r\nRCPT TO:<b@herald.test>\r\nDATA\r\n")
                for reply in ["250 2.1.0 Ok", "250 2.1.5 Ok", "250 2.1.5 Ok", "354 End data with <CR><LF>.<CR><LF>"] {
                    try await client.expect(reply)
                }
                let line = String(repeating: "x", count: 78) + "\r\n"
                let longLine = String(repeating: "y", count: 5_000) + "\r\n"
                try await client.send(String(repeating: line, count: 100) + longLine + ".\r\n")
                try await client.expect("552 5.3.4 Error: message file too big")
                try await client.expect("552 5.3.4 Error: message file too big")
                // The session goes on: a small message still gets through.
                try await client.send("MAIL FROM:<>\r\nRCPT TO:<a@herald.test>\r\nDATA\r\nsmall\r\n.\r\n")
                for reply in ["250 2.1.0 Ok", "250 2.1.5 Ok", "354 End data with <CR><LF>.<CR><LF>", "250 2.0.0 Ok"] {
                    try await client.expect(reply)
                }
            }
        }
        #expect(inbox.deliveries.map(\.data) == [Array("small\r\n".utf8)])
    }

    @Test func recipientsPastTheLimitGet452() async throws {
        let inbox = Inbox()
        try await withListener(.lmtp, maximumRecipients: 2, inbox: inbox) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.greet()
                try await client.expect("250 2.1.0 Ok", after: "MAIL FROM:<>")
                try await client.expect("250 2.1.5 Ok", after: "RCPT TO:<a@herald.test>")
                try await client.expect("250 2.1.5 Ok", after: "RCPT TO:<b@herald.test>")
                try await client.expect("452 4.5.3 Error: too many recipients", after: "RCPT TO:<c@herald.test>")
                try await client.expect("354 End data with <CR><LF>.<CR><LF>", after: "DATA")
                try await client.send("x\r\n.\r\n")
                try await client.expect("250 2.0.0 Ok")
                try await client.expect("250 2.0.0 Ok")
            }
        }
        #expect(inbox.deliveries.map(\.recipients) == [["a@herald.test", "b@herald.test"]])
    }

    @Test func commandsOutOfSequenceGet503() async throws {
        try await withListener(.lmtp, inbox: Inbox()) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.expect("220 mx.herald.test LMTP Herald")
                try await client.expect("503 5.5.1 Error: send LHLO first", after: "MAIL FROM:<>")
                try await client.greet(expectingGreeting: false)
                try await client.expect("503 5.5.1 Error: need MAIL command", after: "DATA")
                try await client.expect("503 5.5.1 Error: need MAIL command", after: "RCPT TO:<a@herald.test>")
                try await client.expect("250 2.1.0 Ok", after: "MAIL FROM:<>")
                try await client.expect("503 5.5.1 Error: nested MAIL command", after: "MAIL FROM:<>")
                try await client.expect("503 5.5.1 Error: need RCPT command", after: "DATA")
                try await client.expect("250 2.0.0 Ok", after: "RSET")
                try await client.expect("503 5.5.1 Error: need MAIL command", after: "RCPT TO:<a@herald.test>")
                try await client.expect("500 5.5.2 Error: command not recognized", after: "STARTTLS")
            }
        }
    }

    @Test func overlongCommandLinesAreRefusedAndRepeatedOnesClose() async throws {
        try await withListener(.lmtp, inbox: Inbox()) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.greet()
                let overlong = "NOOP " + String(repeating: "z", count: 2_000)
                try await client.expect("500 5.5.2 Error: line too long", after: overlong)
                try await client.expect("250 2.0.0 Ok", after: "NOOP " + String(repeating: "z", count: 993))
                try await client.expect("500 5.5.2 Error: line too long", after: "NOOP " + String(repeating: "z", count: 994))
                try await client.expect("500 5.5.2 Error: line too long", after: overlong)
                try await client.expect("421 4.7.0 mx.herald.test Error: too many errors")
                try await client.expectClosed()
            }
        }
    }

    @Test func missingOutcomesAreDeferred() async throws {
        let inbox = Inbox { _ in [.accepted] }
        try await withListener(.lmtp, inbox: inbox) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.greet()
                try await client.send("MAIL FROM:<>\r\nRCPT TO:<a@herald.test>\r\nRCPT TO:<b@herald.test>\r\nDATA\r\nx\r\n.\r\n")
                for reply in ["250 2.1.0 Ok", "250 2.1.5 Ok", "250 2.1.5 Ok", "354 End data with <CR><LF>.<CR><LF>"] {
                    try await client.expect(reply)
                }
                try await client.expect("250 2.0.0 Ok")
                try await client.expect("451 4.3.0 internal error")
            }
        }
    }

    @Test func silentClientIsDisconnectedWith421() async throws {
        try await withListener(.smtp, idleTimeout: .milliseconds(200), inbox: Inbox()) { port in
            try await MailTestClient.connect(port: port) { client in
                try await client.expect("220 mx.herald.test ESMTP Herald")
                try await client.expect("421 4.4.2 mx.herald.test Error: timeout exceeded")
                try await client.expectClosed()
            }
        }
    }

    @Test func gracefulShutdownClosesTheListenerAfterOpenTransactions() async throws {
        let inbox = Inbox()
        let (ports, bound) = AsyncStream.makeStream(of: Int.self)
        let listener = MailListener(
            host: "127.0.0.1", port: 0, dialect: .lmtp, hostname: "mx.herald.test", logger: quietLogger,
            onBound: { bound.yield($0) }, deliver: inbox.deliver)
        let group = ServiceGroup(services: [listener], logger: quietLogger)
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await group.run() }
            let port = try #require(await ports.first { _ in true })
            try await MailTestClient.connect(port: port) { busy in
                try await busy.greet()
                try await busy.expect("250 2.1.0 Ok", after: "MAIL FROM:<>")
                try await busy.expect("250 2.1.5 Ok", after: "RCPT TO:<a@herald.test>")
                try await MailTestClient.connect(port: port) { idle in
                    try await idle.greet()
                    await group.triggerGracefulShutdown()
                    try await idle.expect("421 4.3.2 mx.herald.test Service shutting down")
                    try await idle.expectClosed()
                }
                try await busy.expect("354 End data with <CR><LF>.<CR><LF>", after: "DATA")
                try await busy.send("last\r\n.\r\n")
                try await busy.expect("250 2.0.0 Ok")
                try await busy.expect("421 4.3.2 mx.herald.test Service shutting down")
                try await busy.expectClosed()
            }
            try await tasks.next()
            await #expect(throws: (any Error).self) {
                try await MailTestClient.connect(port: port) { _ in }
            }
        }
        #expect(inbox.deliveries.map(\.data) == [Array("last\r\n".utf8)])
    }
}

// MARK: - Helpers

private let quietLogger = Logger(label: "mail-listener-tests") { _ in SwiftLogNoOpLogHandler() }

/// Records deliveries and answers them with `outcomes` (every recipient accepted unless told otherwise).
private final class Inbox: Sendable {
    private let received = Mutex<[MailListener.Delivery]>([])
    private let outcomes: @Sendable (MailListener.Delivery) -> [MailListener.Outcome]

    init(outcomes: @escaping @Sendable (MailListener.Delivery) -> [MailListener.Outcome] = { $0.recipients.map { _ in .accepted } }) {
        self.outcomes = outcomes
    }

    var deliveries: [MailListener.Delivery] { received.withLock { $0 } }

    func deliver(_ delivery: MailListener.Delivery) async -> [MailListener.Outcome] {
        received.withLock { $0.append(delivery) }
        return outcomes(delivery)
    }
}

/// Runs a listener on a free loopback port for `body`, then cancels it.
private func withListener(
    _ dialect: MailListener.Dialect, maximumMessageSize: Int = 10 << 20, maximumRecipients: Int = 100,
    idleTimeout: Duration = .seconds(30), inbox: Inbox, _ body: @escaping @Sendable (Int) async throws -> Void
) async throws {
    let (ports, bound) = AsyncStream.makeStream(of: Int.self)
    let listener = MailListener(
        host: "127.0.0.1", port: 0, dialect: dialect, hostname: "mx.herald.test", maximumMessageSize: maximumMessageSize,
        maximumRecipients: maximumRecipients, idleTimeout: idleTimeout, logger: quietLogger,
        onBound: { bound.yield($0) }, deliver: inbox.deliver)
    try await withThrowingTaskGroup { group in
        group.addTask {
            defer { bound.finish() }
            try await listener.run()
        }
        let port = try #require(await ports.first { _ in true })
        try await body(port)
        group.cancelAll()
        try await group.waitForAll()
    }
}
