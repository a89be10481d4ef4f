import CCurlShim
import Foundation
import HeraldCore

/// An SMTP connection over one libcurl easy handle, reused across messages.
///
/// Not thread-safe: give each thread its own connection. `send` blocks, at most `smtp.timeout`
/// per exchange. After a failure that is not the message's own (a timeout, a dropped connection,
/// a protocol error) the connection is closed at once, without waiting for the server, and the
/// next message opens a fresh one. A connection the server closed while idle (Postfix's `421`
/// after its idle timeout) is reopened and the message sent again on the new connection, since
/// none of it had been transmitted.
///
/// ```swift
/// let connection = try CurlSMTPConnection(settings: SMTPSettings(configuration.smtp))
/// let result = connection.send(from: "noreply@example.com", to: ["ada@example.com"], message: bytes)
/// ```
public final class CurlSMTPConnection: MailTransport {
    private let handle: UnsafeMutableRawPointer
    /// libcurl writes error text here for the handle's whole life, so it must outlive every call.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    public private(set) var connectionsOpened = 0

    /// Initialises libcurl once per process; call before starting threads.
    public static func initializeLibrary() { _ = globalInit }
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    public init(settings: SMTPSettings) throws {
        Self.initializeLibrary()
        guard let handle = curl_easy_init() else { throw HeraldError(.invalidConfiguration, "libcurl could not create a handle") }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try configure(settings)
    }

    deinit {
        // A healthy idle connection gets its QUIT, but the wait for the reply is short: a stop is
        // never held up by a slow server.
        ccurl_easy_setopt_long(handle, CURLOPT_SERVER_RESPONSE_TIMEOUT, 1)
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    private func configure(_ settings: SMTPSettings) throws {
        try set(CURLOPT_URL, settings.url)
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_UPLOAD, 1)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Int(settings.connectTimeout * 1000))
        try set(CURLOPT_TIMEOUT_MS, Int(settings.timeout * 1000))
        // Bounds each wait for a reply (the default is 120 s).
        try set(CURLOPT_SERVER_RESPONSE_TIMEOUT, max(1, Int(settings.timeout.rounded(.up))))
        if settings.requireStartTLS {
            try set(CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue))
        } else if !settings.username.isEmpty {
            try set(CURLOPT_USE_SSL, Int(CURLUSESSL_TRY.rawValue))  // upgrade when offered before sending credentials
        }
        if !settings.username.isEmpty {
            try set(CURLOPT_USERNAME, settings.username)
            try set(CURLOPT_PASSWORD, settings.password)
        }
        if !settings.caFile.isEmpty { try set(CURLOPT_CAINFO, settings.caFile) }
        if settings.insecure {
            try set(CURLOPT_SSL_VERIFYPEER, 0)
            try set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        try check(ccurl_easy_setopt_callback(handle, CURLOPT_READFUNCTION, readCallback), "CURLOPT_READFUNCTION")
        try check(ccurl_easy_setopt_callback(handle, CURLOPT_HEADERFUNCTION, replyCallback), "CURLOPT_HEADERFUNCTION")
        // The commands libcurl sends tell which one a failing reply answers (greeting, EHLO, MAIL, RCPT, DATA).
        try check(ccurl_easy_setopt_debug(handle, commandCallback), "CURLOPT_DEBUGFUNCTION")
        try set(CURLOPT_VERBOSE, 1)
    }

    public func send(from sender: String, to recipients: [String], message: [UInt8]) -> DeliveryResult {
        let first = perform(from: sender, to: recipients, message: message)
        guard first.staleConnection else { return first.result }
        // The server had closed the idle connection (or said 421 on it) before any of the message
        // went out: not this message's failure. Once more on a fresh connection.
        return perform(from: sender, to: recipients, message: message).result
    }

    /// One exchange; `staleConnection` when a reused connection turned out closed before the message was sent.
    private func perform(from sender: String, to recipients: [String], message: [UInt8]) -> (result: DeliveryResult, staleConnection: Bool) {
        let exchange = Exchange(message: message)
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for recipient in recipients { list = curl_slist_append(list, "<\(recipient)>") }
        defer { curl_slist_free_all(list) }
        errorBuffer[0] = 0
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        var code = ccurl_easy_setopt_string(handle, CURLOPT_MAIL_FROM, "<\(sender)>")
        if code == CURLE_OK { code = ccurl_easy_setopt_slist(handle, CURLOPT_MAIL_RCPT, list) }
        if code == CURLE_OK { code = ccurl_easy_setopt_int64(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(message.count)) }
        if code == CURLE_OK { code = ccurl_easy_setopt_pointer(handle, CURLOPT_READDATA, context) }
        if code == CURLE_OK { code = ccurl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, context) }
        if code == CURLE_OK { code = ccurl_easy_setopt_pointer(handle, CURLOPT_DEBUGDATA, context) }
        if code == CURLE_OK {
            code = withExtendedLifetime(exchange) { curl_easy_perform(handle) }
        }
        // The exchange and the recipient list die with this call; leave libcurl no pointer to them.
        ccurl_easy_setopt_pointer(handle, CURLOPT_READDATA, nil)
        ccurl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, nil)
        ccurl_easy_setopt_pointer(handle, CURLOPT_DEBUGDATA, nil)
        ccurl_easy_setopt_slist(handle, CURLOPT_MAIL_RCPT, nil)
        var connects = 0
        ccurl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        connectionsOpened += connects
        var responseCode = 0
        ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &responseCode)
        let failure = Failure(
            code: code, reply: exchange.failureReply, command: exchange.failureCommand, lastReply: exchange.lastReply,
            responseCode: responseCode, error: errorText(code))
        let result = Self.classify(failure)
        // After any failure the session's state is unknown (a half-done transaction, a dead socket): start afresh.
        if result.outcome != .sent { closeNow() }
        let stale = connects == 0 && exchange.offset == 0 && result.outcome == .connection && Self.isClosing(failure)
        return (result, stale)
    }

    /// Drops the connection without a QUIT or any wait: libcurl finds it dead and opens a new one next time.
    private func closeNow() {
        let socket = ccurl_easy_active_socket(handle)
        if socket >= 0 { _ = shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// What went wrong with one exchange, as libcurl and the server's replies tell it.
    struct Failure {
        let code: CURLcode
        /// The first 4xx/5xx reply, and the command it answered.
        let reply: String?
        let command: SMTPCommand?
        let lastReply: String?
        let responseCode: Int
        let error: String
    }

    /// The server closed (or is closing) the connection: `421`, or the connection ended with no reply.
    static func isClosing(_ failure: Failure) -> Bool {
        if let reply = failure.reply { return reply.hasPrefix("421") }
        return [CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING].contains(failure.code)
    }

    /// Maps libcurl's result and the server's replies to an outcome.
    ///
    /// Only replies to the message's own RCPT and DATA (and a 552 size refusal to MAIL) speak about
    /// the message; everything else — refused or dropped connections, timeouts, TLS, AUTH, the
    /// greeting, EHLO/HELO, MAIL, any 421 — is the connection's, and charges the message nothing.
    static func classify(_ failure: Failure) -> DeliveryResult {
        let replyText = failure.reply ?? failure.lastReply
        let replyCode = replyText.flatMap { Int($0.prefix(3)) } ?? (failure.responseCode > 0 ? failure.responseCode : nil)
        if failure.code == CURLE_OK {
            return DeliveryResult(outcome: .sent, replyCode: replyCode, replyText: failure.lastReply ?? "accepted")
        }
        if let reply = failure.reply, let code = Int(reply.prefix(3)) {
            let messageLevel: Bool
            switch failure.command {
            case .rcpt?, .data?: messageLevel = code != 421 && ![530, 534, 535, 538].contains(code)
            case .mail?: messageLevel = code == 552 || reply.contains("5.3.4")
            default: messageLevel = false
            }
            if messageLevel {
                return DeliveryResult(outcome: code >= 500 ? .permanent : .transient, replyCode: code, replyText: reply)
            }
            let stage = (failure.command ?? .greeting).stage
            if failure.code == CURLE_LOGIN_DENIED || failure.command == .auth {
                return DeliveryResult(outcome: .connection, replyCode: code, replyText: "authentication failed: \(reply)")
            }
            return DeliveryResult(outcome: .connection, replyCode: code, replyText: "\(stage) refused: \(reply)")
        }
        switch failure.code {
        case CURLE_LOGIN_DENIED:
            return DeliveryResult(outcome: .connection, replyCode: replyCode, replyText: "authentication failed: \(failure.error)")
        case CURLE_USE_SSL_FAILED where failure.command != .starttls:
            return DeliveryResult(
                outcome: .connection, replyCode: nil, replyText: "TLS failed: the server does not offer STARTTLS (\(failure.error))")
        case CURLE_USE_SSL_FAILED, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
            CURLE_SSL_CERTPROBLEM:
            return DeliveryResult(outcome: .connection, replyCode: nil, replyText: "TLS failed: \(failure.error)")
        default:
            // No failing reply: refused, timed out, dropped (an intermediate 354 is not an answer).
            return DeliveryResult(
                outcome: .connection, replyCode: nil, replyText: "\(failure.error) (last reply: \(failure.lastReply ?? "none"))")
        }
    }

    private func errorText(_ code: CURLcode) -> String {
        let detail = String(cString: errorBuffer)
        let summary = String(cString: curl_easy_strerror(code))
        return "curl error \(code.rawValue): \(detail.isEmpty ? summary : detail)"
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        try check(ccurl_easy_setopt_long(handle, option, value), "option \(option.rawValue)")
    }

    private func set(_ option: CURLoption, _ value: String) throws {
        try check(ccurl_easy_setopt_string(handle, option, value), "option \(option.rawValue)")
    }

    private func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer) throws {
        try check(ccurl_easy_setopt_pointer(handle, option, pointer), "option \(option.rawValue)")
    }

    private func check(_ code: CURLcode, _ what: String) throws {
        guard code == CURLE_OK else {
            throw HeraldError(.invalidConfiguration, "libcurl rejected \(what): \(String(cString: curl_easy_strerror(code)))")
        }
    }
}

/// An SMTP command libcurl sent, as far as telling whose failure a reply is goes.
enum SMTPCommand: Sendable {
    case greeting, ehlo, starttls, auth, mail, rcpt, data, quit

    init?(line: UnsafeRawBufferPointer) {
        var word = ""
        for byte in line.prefix(8) {
            guard (65...90).contains(byte) || (97...122).contains(byte) else { break }
            word.append(Character(Unicode.Scalar(byte & 0xDF)))
        }
        switch word {
        case "EHLO", "HELO": self = .ehlo
        case "STARTTLS": self = .starttls
        case "AUTH": self = .auth
        case "MAIL": self = .mail
        case "RCPT": self = .rcpt
        case "DATA": self = .data
        case "QUIT": self = .quit
        default: return nil
        }
    }

    /// How a refusal at this point reads in the ledger.
    var stage: String {
        switch self {
        case .greeting: "greeting"
        case .ehlo: "EHLO"
        case .starttls: "STARTTLS"
        case .auth: "AUTH"
        case .mail: "MAIL FROM"
        case .rcpt: "RCPT TO"
        case .data: "DATA"
        case .quit: "QUIT"
        }
    }
}

/// The state of one message's upload and the replies seen, shared with libcurl's callbacks.
private final class Exchange {
    let message: [UInt8]
    var offset = 0
    /// The last complete reply line seen.
    var lastReply: String?
    /// The first 4xx/5xx reply: the one that failed the message (libcurl may QUIT after it).
    var failureReply: String?
    /// The last command sent (nil before any: a reply then is the greeting), and the one the failure answered.
    var lastCommand: SMTPCommand?
    var failureCommand: SMTPCommand?

    init(message: [UInt8]) { self.message = message }

    /// Records a complete reply line; continuation lines ("250-…") are skipped. Works on the bytes: a String is
    /// made only for the lines kept.
    func receive(_ line: UnsafeRawBufferPointer) {
        var end = line.count
        while end > 0, line[end - 1] == 13 || line[end - 1] == 10 { end -= 1 }
        guard end >= 3, (48...57).contains(line[0]), (48...57).contains(line[1]), (48...57).contains(line[2]) else { return }
        guard end == 3 || line[3] == UInt8(ascii: " ") else { return }
        let reply = String(decoding: UnsafeRawBufferPointer(rebasing: line[..<end]), as: UTF8.self)
        lastReply = reply
        if failureReply == nil, line[0] == UInt8(ascii: "4") || line[0] == UInt8(ascii: "5") {
            failureReply = reply
            failureCommand = lastCommand ?? .greeting
        }
    }
}

private let readCallback: ccurl_data_callback = { buffer, size, count, userdata in
    guard let buffer, let userdata else { return 0 }
    let exchange = Unmanaged<Exchange>.fromOpaque(userdata).takeUnretainedValue()
    let length = min(size * count, exchange.message.count - exchange.offset)
    guard length > 0 else { return 0 }
    exchange.message.withUnsafeBytes { bytes in
        UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + exchange.offset, byteCount: length)
    }
    exchange.offset += length
    return length
}

private let replyCallback: ccurl_data_callback = { buffer, size, count, userdata in
    guard let buffer, let userdata else { return size * count }
    let exchange = Unmanaged<Exchange>.fromOpaque(userdata).takeUnretainedValue()
    exchange.receive(UnsafeRawBufferPointer(start: buffer, count: size * count))
    return size * count
}

/// Notes each command libcurl sends; libcurl's other debug output is ignored.
private let commandCallback: ccurl_debug_callback = { _, type, data, size, userdata in
    guard type == CURLINFO_HEADER_OUT, let data, let userdata else { return 0 }
    let exchange = Unmanaged<Exchange>.fromOpaque(userdata).takeUnretainedValue()
    if let command = SMTPCommand(line: UnsafeRawBufferPointer(start: data, count: size)) { exchange.lastCommand = command }
    return 0
}
