import Foundation
import HeraldCore

#if canImport(Glibc)
    import Glibc
#endif

/// `herald check`'s look at the relay: opens a connection as the worker does (greeting, EHLO, STARTTLS as configured,
/// AUTH), names the envelope sender with `MAIL FROM` and takes it back with `RSET`, then says goodbye: nothing is sent.
///
/// ```swift
/// switch RelayProbe.run(SMTPSettings(configuration.smtp), sender: "noreply@example.com") {
/// case .success(let summary): print("relay: \(summary)")   // "accepted MAIL FROM (250 2.1.0 Ok); PIPELINING, SIZE"
/// case .failure(let problem): print("relay: \(problem.reason)")
/// }
/// ```
public enum RelayProbe {
    /// Why the relay would not take mail as configured: the worker's own wording for the failure.
    public struct Problem: Error, Sendable {
        public let reason: String
    }

    public static func run(_ settings: SMTPSettings, sender: String) -> Result<String, Problem> {
        let session: SMTPSession
        switch SMTPSession.open(settings) {
        case .success(let opened): session = opened
        case .failure(let failure): return .failure(Problem(reason: failure.result.replyText))
        }
        var reader = SMTPReplyReader()
        let deadline = Date().addingTimeInterval(max(1, settings.timeout))
        guard let mail = exchange(session, "MAIL FROM:<\(sender)>\r\n", &reader, until: deadline) else {
            session.close(polite: false)
            return .failure(Problem(reason: "MAIL FROM got no reply within smtp.timeout"))
        }
        _ = exchange(session, "RSET\r\n", &reader, until: deadline)
        session.close(polite: true)
        guard (200..<300).contains(mail.code) else {
            return .failure(Problem(reason: "MAIL FROM:<\(sender)> refused: \(mail.line) (check smtp.from and the relay's sender rules)"))
        }
        let extensions = [session.pipelining ? "PIPELINING" : nil, session.announcesSize ? "SIZE" : nil].compactMap { $0 }
        return .success("accepted MAIL FROM (\(mail.line))" + (extensions.isEmpty ? "" : "; offers \(extensions.joined(separator: ", "))"))
    }

    /// Writes one command and waits for its reply, polling the socket until `deadline`.
    private static func exchange(_ session: SMTPSession, _ command: String, _ reader: inout SMTPReplyReader, until deadline: Date)
        -> SMTPReplyReader.Reply?
    {
        let bytes = Array(command.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = session.write(bytes, from: offset)
            if written.failed { return nil }
            offset = written.offset
            if offset < bytes.count, !wait(session.socket, for: Int16(POLLOUT), until: deadline) { return nil }
        }
        while true {
            if let reply = reader.next() { return reply }
            guard wait(session.socket, for: Int16(POLLIN), until: deadline) else { return nil }
            guard case .data = session.read(into: &reader) else { return reader.next() }
        }
    }

    private static func wait(_ socket: Int32, for events: Int16, until deadline: Date) -> Bool {
        let milliseconds = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
        guard milliseconds > 0 else { return false }
        var descriptor = pollfd(fd: socket, events: events, revents: 0)
        return poll(&descriptor, 1, milliseconds) > 0
    }
}
