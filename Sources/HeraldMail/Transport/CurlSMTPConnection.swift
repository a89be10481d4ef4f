import CCurlShim
import Foundation
import HeraldCore

/// An SMTP connection over one libcurl easy handle, reused across messages.
///
/// Not thread-safe: give each thread its own connection. `send` blocks.
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
        curl_easy_cleanup(handle)  // sends QUIT on an open connection
        errorBuffer.deallocate()
    }

    private func configure(_ settings: SMTPSettings) throws {
        try set(CURLOPT_URL, settings.url)
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_UPLOAD, 1)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Int(settings.connectTimeout * 1000))
        try set(CURLOPT_TIMEOUT_MS, Int(settings.timeout * 1000))
        // Bounds each wait for a reply, including the QUIT libcurl sends on a stalled connection
        // at clean-up (the default is 120 s).
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
    }

    public func send(from sender: String, to recipients: [String], message: [UInt8]) -> DeliveryResult {
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
        if code == CURLE_OK {
            code = withExtendedLifetime(exchange) { curl_easy_perform(handle) }
        }
        // The exchange and the recipient list die with this call; leave libcurl no pointer to them.
        ccurl_easy_setopt_pointer(handle, CURLOPT_READDATA, nil)
        ccurl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, nil)
        ccurl_easy_setopt_slist(handle, CURLOPT_MAIL_RCPT, nil)
        var connects = 0
        ccurl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        connectionsOpened += connects
        var responseCode = 0
        ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &responseCode)
        return Self.classify(
            code: code, responseCode: responseCode,
            lastReply: code == CURLE_OK ? exchange.lastReply : exchange.failureReply ?? exchange.lastReply, error: errorText(code))
    }

    /// Maps libcurl's result and the last reply to an outcome.
    static func classify(code: CURLcode, responseCode: Int, lastReply: String?, error: String) -> DeliveryResult {
        let replyCode = lastReply.flatMap { Int($0.prefix(3)) } ?? (responseCode > 0 ? responseCode : nil)
        let text = lastReply ?? error
        if code == CURLE_OK {
            return DeliveryResult(outcome: .sent, replyCode: replyCode, replyText: text)
        }
        switch code {
        case CURLE_LOGIN_DENIED:
            return DeliveryResult(outcome: .transient, replyCode: replyCode, replyText: "authentication failed: \(text)")
        case CURLE_USE_SSL_FAILED, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
            CURLE_SSL_CERTPROBLEM:
            return DeliveryResult(outcome: .transient, replyCode: replyCode, replyText: "TLS failed: \(text)")
        default:
            break
        }
        // 530/534/535/538: the server wants authentication or TLS first; a set-up problem, not the message's.
        if let replyCode, (500..<600).contains(replyCode), ![530, 534, 535, 538].contains(replyCode) {
            return DeliveryResult(outcome: .permanent, replyCode: replyCode, replyText: text)
        }
        if let replyCode, (400..<600).contains(replyCode) {
            return DeliveryResult(outcome: .transient, replyCode: replyCode, replyText: text)
        }
        // A network failure: no reply answered the message (an intermediate 354 is not an answer).
        return DeliveryResult(outcome: .transient, replyCode: nil, replyText: "\(error) (last reply: \(lastReply ?? "none"))")
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

/// The state of one message's upload and the replies seen, shared with libcurl's callbacks.
private final class Exchange {
    let message: [UInt8]
    var offset = 0
    /// The last complete reply line seen.
    var lastReply: String?
    /// The first 4xx/5xx reply: the one that failed the message (libcurl may QUIT after it).
    var failureReply: String?

    init(message: [UInt8]) { self.message = message }

    /// Records a complete reply line; continuation lines ("250-…") are skipped.
    func receive(_ line: String) {
        let trimmed = line.trimmingCharacters(in: .newlines)
        let bytes = Array(trimmed.utf8)
        guard bytes.count >= 3, bytes[0...2].allSatisfy({ (48...57).contains($0) }) else { return }
        guard bytes.count == 3 || bytes[3] == UInt8(ascii: " ") else { return }
        lastReply = trimmed
        if failureReply == nil, bytes[0] == UInt8(ascii: "4") || bytes[0] == UInt8(ascii: "5") { failureReply = trimmed }
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
    let bytes = UnsafeRawBufferPointer(start: buffer, count: size * count)
    exchange.receive(String(decoding: bytes, as: UTF8.self))
    return size * count
}
