import CCurlShim
import Foundation
import HeraldCore

/// One open SMTP connection: libcurl opened it (greeting, EHLO, STARTTLS, AUTH — `CURLOPT_CONNECT_ONLY`),
/// and Herald speaks the mail transactions on it through `curl_easy_send`/`curl_easy_recv`, without
/// blocking, so one thread drives every connection (`CurlSMTPDispatcher`).
///
/// Not thread-safe: the thread that opened it hands it over once, then one thread uses it.
final class SMTPSession {
    private let handle: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// The socket libcurl connected, for `poll`.
    let socket: Int32
    /// The server advertised PIPELINING (RFC 2920): a transaction's commands go out in one write.
    let pipelining: Bool
    /// The server advertised SIZE (RFC 1870): MAIL FROM says how big the message is.
    let announcesSize: Bool
    /// Messages this connection has carried; a reused connection the server closed while idle is no
    /// message's failure.
    var served = 0
    private var closed = false

    /// Why opening failed, and how many connections libcurl made trying.
    struct OpenFailure: Error {
        let result: DeliveryResult
        let connects: Int
    }

    /// Opens a connection, blocking for at most `connectTimeout + timeout`.
    static func open(_ settings: SMTPSettings) -> Result<SMTPSession, OpenFailure> {
        CurlSMTPDispatcher.initializeLibrary()
        guard let handle = curl_easy_init() else {
            return .failure(OpenFailure(result: SMTPVerdict.broken("libcurl could not create a handle", lastReply: nil), connects: 0))
        }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let log = ConnectLog()
        var code = configure(handle, settings, errorBuffer)
        if code == CURLE_OK {
            code = withExtendedLifetime(log) {
                ccurl_easy_setopt_pointer(handle, CURLOPT_DEBUGDATA, Unmanaged.passUnretained(log).toOpaque())
                return curl_easy_perform(handle)
            }
        }
        // The log dies with this call: libcurl's later output (the QUIT at the end) goes nowhere.
        ccurl_easy_setopt_long(handle, CURLOPT_VERBOSE, 0)
        ccurl_easy_setopt_pointer(handle, CURLOPT_DEBUGDATA, nil)
        var connects = 0
        ccurl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        let socket = ccurl_easy_active_socket(handle)
        guard code == CURLE_OK, socket >= 0 else {
            let detail = String(cString: errorBuffer)
            let error = "curl error \(code.rawValue): \(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)"
            let failure = classify(code, log, error)
            if socket >= 0 { _ = shutdown(socket, Int32(SHUT_RDWR)) }
            curl_easy_cleanup(handle)
            errorBuffer.deallocate()
            return .failure(OpenFailure(result: failure, connects: connects))
        }
        return .success(SMTPSession(handle: handle, errorBuffer: errorBuffer, socket: Int32(socket), capabilities: log.capabilities))
    }

    private init(handle: UnsafeMutableRawPointer, errorBuffer: UnsafeMutablePointer<CChar>, socket: Int32, capabilities: Set<String>) {
        self.handle = handle
        self.errorBuffer = errorBuffer
        self.socket = socket
        pipelining = capabilities.contains("PIPELINING")
        announcesSize = capabilities.contains("SIZE")
    }

    deinit { close(polite: false) }

    private static func configure(
        _ handle: UnsafeMutableRawPointer, _ settings: SMTPSettings, _ errorBuffer: UnsafeMutablePointer<CChar>
    ) -> CURLcode {
        var code = ccurl_easy_setopt_string(handle, CURLOPT_URL, settings.url)
        func set(_ option: CURLoption, _ value: Int) {
            if code == CURLE_OK { code = ccurl_easy_setopt_long(handle, option, value) }
        }
        func set(_ option: CURLoption, _ value: String) {
            if code == CURLE_OK { code = ccurl_easy_setopt_string(handle, option, value) }
        }
        if code == CURLE_OK { code = ccurl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer)) }
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_CONNECT_ONLY, 1)
        set(CURLOPT_CONNECTTIMEOUT_MS, Int(settings.connectTimeout * 1000))
        set(CURLOPT_TIMEOUT_MS, Int((settings.connectTimeout + settings.timeout) * 1000))
        // Bounds each wait for a reply (the default is 120 s), including the QUIT's at the end.
        set(CURLOPT_SERVER_RESPONSE_TIMEOUT, max(1, Int(settings.timeout.rounded(.up))))
        if settings.requireStartTLS {
            set(CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue))
        } else if !settings.username.isEmpty {
            set(CURLOPT_USE_SSL, Int(CURLUSESSL_TRY.rawValue))  // upgrade when offered before sending credentials
        }
        if !settings.username.isEmpty {
            set(CURLOPT_USERNAME, settings.username)
            set(CURLOPT_PASSWORD, settings.password)
        }
        if !settings.caFile.isEmpty { set(CURLOPT_CAINFO, settings.caFile) }
        if settings.insecure {
            set(CURLOPT_SSL_VERIFYPEER, 0)
            set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if code == CURLE_OK { code = ccurl_easy_setopt_debug(handle, connectLogCallback) }
        // The commands libcurl sends tell which one a failing reply answers; the EHLO reply lists the extensions.
        set(CURLOPT_VERBOSE, 1)
        return code
    }

    /// Maps a failed open to an outcome: always the connection's, never a message's.
    private static func classify(_ code: CURLcode, _ log: ConnectLog, _ error: String) -> DeliveryResult {
        // The greeting, EHLO, STARTTLS and AUTH: refusals of these are always the connection's.
        if let reply = log.failureReply { return SMTPVerdict.refusal(reply, to: log.failureCommand ?? .greeting) }
        switch code {
        case CURLE_LOGIN_DENIED:
            return DeliveryResult(outcome: .connection, replyCode: nil, replyText: "authentication failed: \(error)")
        case CURLE_USE_SSL_FAILED where log.lastCommand != .starttls:
            return DeliveryResult(outcome: .connection, replyCode: nil, replyText: "TLS failed: the server does not offer STARTTLS (\(error))")
        case CURLE_USE_SSL_FAILED, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM:
            return DeliveryResult(outcome: .connection, replyCode: nil, replyText: "TLS failed: \(error)")
        default:
            return SMTPVerdict.broken(error, lastReply: log.lastReply)
        }
    }

    /// Writes as much of `bytes[offset...]` as the socket takes; returns the new offset, and whether the
    /// connection failed (after the bytes up to that offset went out).
    func write(_ bytes: [UInt8], from offset: Int) -> (offset: Int, failed: Bool) {
        var offset = offset
        while offset < bytes.count {
            var written = 0
            let code = bytes.withUnsafeBytes { buffer in
                curl_easy_send(handle, buffer.baseAddress! + offset, buffer.count - offset, &written)
            }
            if code == CURLE_AGAIN { return (offset, false) }
            guard code == CURLE_OK else { return (offset, true) }
            offset += written
        }
        return (offset, false)
    }

    /// What a read found.
    enum Read {
        /// Bytes arrived (or none yet).
        case data
        /// The server closed the connection.
        case closed
        case failed(String)
    }

    /// Reads what has arrived into `reader`, until the socket has nothing more.
    func read(into reader: inout SMTPReplyReader) -> Read {
        withUnsafeTemporaryAllocation(byteCount: 16384, alignment: 1) { buffer in
            while true {
                var count = 0
                let code = curl_easy_recv(handle, buffer.baseAddress, buffer.count, &count)
                if code == CURLE_AGAIN { return .data }
                guard code == CURLE_OK else { return .failed("curl error \(code.rawValue): \(String(cString: curl_easy_strerror(code)))") }
                if count == 0 { return .closed }
                // Read on until libcurl has nothing more: TLS may hold decrypted bytes the socket no longer shows.
                reader.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            }
        }
    }

    /// Ends the connection. `polite`: a QUIT, its reply awaited at most a second; otherwise the socket is
    /// shut at once (its state is unknown after a failure) and libcurl's QUIT goes nowhere.
    func close(polite: Bool) {
        guard !closed else { return }
        closed = true
        if polite {
            ccurl_easy_setopt_long(handle, CURLOPT_SERVER_RESPONSE_TIMEOUT, 1)
        } else {
            _ = shutdown(socket, Int32(SHUT_RDWR))
        }
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }
}

/// What libcurl sent and heard while opening a connection, from its debug callback.
private final class ConnectLog {
    var lastCommand: SMTPCommand?
    var lastReply: String?
    /// The first 4xx/5xx reply since the last positive one, and the command it answered (nil: the greeting).
    var failureReply: String?
    var failureCommand: SMTPCommand?
    /// The extensions the last EHLO reply listed (`PIPELINING`, `SIZE`, …).
    var capabilities: Set<String> = []

    func sent(_ line: UnsafeRawBufferPointer) {
        guard let command = SMTPCommand(line: line) else { return }
        lastCommand = command
        if command == .ehlo { capabilities = [] }
    }

    func heard(_ data: UnsafeRawBufferPointer) {
        var reader = SMTPReplyLines(data)
        while let line = reader.next() {
            guard line.count >= 3, line.prefix(3).allSatisfy({ (48...57).contains($0) }) else { continue }
            if lastCommand == .ehlo, line.count > 4, line[line.startIndex] == UInt8(ascii: "2") {
                let keyword = line.dropFirst(4).prefix { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "=") }
                capabilities.insert(String(decoding: keyword, as: UTF8.self).uppercased())
            }
            guard line.count == 3 || line[line.startIndex + 3] == UInt8(ascii: " ") else { continue }
            let reply = String(decoding: line, as: UTF8.self)
            lastReply = reply
            if line[line.startIndex] == UInt8(ascii: "4") || line[line.startIndex] == UInt8(ascii: "5") {
                if failureReply == nil {
                    failureReply = reply
                    failureCommand = lastCommand ?? .greeting
                }
            } else {
                // libcurl went past that refusal (EHLO's to HELO, an optional STARTTLS): it is not why opening failed.
                failureReply = nil
                failureCommand = nil
            }
        }
    }
}

/// The lines of a debug callback's data, without their line ends.
private struct SMTPReplyLines {
    let data: UnsafeRawBufferPointer
    var offset = 0

    init(_ data: UnsafeRawBufferPointer) { self.data = data }

    mutating func next() -> Slice<UnsafeRawBufferPointer>? {
        guard offset < data.count else { return nil }
        let start = offset
        var end = data[start...].firstIndex(of: 10) ?? data.count
        offset = end + 1
        while end > start, data[end - 1] == 13 || data[end - 1] == 10 { end -= 1 }
        return data[start..<end]
    }
}

private let connectLogCallback: ccurl_debug_callback = { _, type, data, size, userdata in
    guard let data, let userdata else { return 0 }
    let log = Unmanaged<ConnectLog>.fromOpaque(userdata).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    if type == CURLINFO_HEADER_OUT {
        log.sent(bytes)
    } else if type == CURLINFO_HEADER_IN {
        log.heard(bytes)
    }
    return 0
}
