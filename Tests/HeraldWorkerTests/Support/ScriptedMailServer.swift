import HeraldMail
import Synchronization

/// One message as the worker handed it to its transport: the envelope and the encoded bytes.
struct CapturedMail: Sendable {
    let sender: String
    let recipients: [String]
    let bytes: [UInt8]

    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The action code of the link in the (quoted-printable) body.
    var actionCode: String? {
        let body = text.replacingOccurrences(of: "=\r\n", with: "").replacingOccurrences(of: "=3D", with: "=")
        guard let start = body.range(of: "oobCode=")?.upperBound else { return nil }
        let code = body[start...].prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
        return code.isEmpty ? nil : String(code)
    }
}

/// The far side of every `ScriptedTransport` of a run: answers each send with the next scripted
/// result (then `otherwise`) and records what it was given, in order.
final class ScriptedMailServer: Sendable {
    private struct State {
        var script: [DeliveryResult]
        var received: [CapturedMail] = []
    }

    private let state: Mutex<State>
    private let otherwise: DeliveryResult
    private let afterSend: @Sendable (_ count: Int) -> Void

    /// - Parameter afterSend: called with the number of sends so far, after each answer is chosen
    ///   and before the worker sees it (e.g. to stop the worker after the first send).
    init(
        script: [DeliveryResult] = [], otherwise: DeliveryResult = .accepted, afterSend: @escaping @Sendable (_ count: Int) -> Void = { _ in }
    ) {
        state = Mutex(State(script: script))
        self.otherwise = otherwise
        self.afterSend = afterSend
    }

    var received: [CapturedMail] { state.withLock { $0.received } }

    /// A new connection, as `Worker`'s `makeTransport` opens one per connection thread.
    func connect() -> any MailTransport { ScriptedTransport(server: self) }

    fileprivate func answer(_ mail: CapturedMail) -> DeliveryResult {
        let (result, count) = state.withLock { state in
            state.received.append(mail)
            let result = state.script.isEmpty ? otherwise : state.script.removeFirst()
            return (result, state.received.count)
        }
        afterSend(count)
        return result
    }
}

/// A `MailTransport` at the real seam that talks to a `ScriptedMailServer` instead of SMTP.
final class ScriptedTransport: MailTransport {
    private let server: ScriptedMailServer
    private(set) var connectionsOpened = 0

    init(server: ScriptedMailServer) { self.server = server }

    func send(from sender: String, to recipients: [String], message: [UInt8]) -> DeliveryResult {
        if connectionsOpened == 0 { connectionsOpened = 1 }
        return server.answer(CapturedMail(sender: sender, recipients: recipients, bytes: message))
    }
}

extension DeliveryResult {
    static let accepted = DeliveryResult(outcome: .sent, replyCode: 250, replyText: "250 2.0.0 Ok: queued as 4F2A")
    static let greylisted = DeliveryResult(outcome: .transient, replyCode: 451, replyText: "451 4.7.1 Greylisted, try again later")
    static let noSuchUser = DeliveryResult(outcome: .permanent, replyCode: 550, replyText: "550 5.1.1 No such user")
    static let refused = DeliveryResult(outcome: .connection, replyCode: nil, replyText: "curl error 7: Couldn't connect to server")
    static let unanswered = DeliveryResult(
        outcome: .possiblyDelivered, replyCode: nil,
        replyText: "possibly delivered: timed out after 600 s waiting for the reply to the end of data (last reply: 354 go ahead)")
}
