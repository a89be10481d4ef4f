import CCurlShim
import Foundation
import HeraldCore

/// Small blocking HTTPS requests over libcurl: an identity provider's JWKS and token endpoint, Twitter's
/// `verify_credentials` and OAuth 1.0a token exchanges, webhook POSTs.
///
/// Each call uses its own easy handle, so the client is safe from any thread. Answers larger than
/// `maxBytes` are refused; redirects are not followed (a provider's endpoints are configured exactly).
///
/// ```swift
/// let answer = try CurlHTTPClient(timeout: 10).get("https://www.googleapis.com/oauth2/v3/certs")
/// guard answer.status == 200 else { … }
/// ```
public struct CurlHTTPClient: Sendable {
    public struct Answer: Sendable {
        public let status: Int
        public let body: Data
    }

    /// Seconds for the whole exchange, connecting included.
    public var timeout: Int
    /// The largest answer body read.
    public var maxBytes: Int

    public init(timeout: Int = 10, maxBytes: Int = 1 << 20) {
        self.timeout = timeout
        self.maxBytes = maxBytes
    }

    /// GETs `url` with these extra header lines (`Name: value`).
    ///
    /// - Throws: `HeraldError(.unavailable)` when the server cannot be reached or does not answer in time.
    public func get(_ url: String, headers: [String] = []) throws -> Answer {
        try perform(url, headers: headers, form: nil)
    }

    /// POSTs `form` (`application/x-www-form-urlencoded`, already encoded) to `url` with these extra header lines.
    ///
    /// - Throws: `HeraldError(.unavailable)` when the server cannot be reached or does not answer in time.
    public func post(_ url: String, form: String, headers: [String] = []) throws -> Answer {
        try perform(url, headers: headers + ["Content-Type: application/x-www-form-urlencoded"], form: form)
    }

    /// POSTs `json` (`application/json`) to `url` with these extra header lines.
    ///
    /// - Throws: `HeraldError(.unavailable)` when the server cannot be reached or does not answer in time.
    public func post(_ url: String, json: String, headers: [String] = []) throws -> Answer {
        try perform(url, headers: headers + ["Content-Type: application/json"], form: json)
    }

    private func perform(_ url: String, headers: [String], form: String?) throws -> Answer {
        guard let handle = curl_easy_init() else { throw HeraldError(.unavailable, "libcurl could not create a handle") }
        defer { curl_easy_cleanup(handle) }
        let sink = Sink(limit: maxBytes)
        let context = Unmanaged.passUnretained(sink).toOpaque()
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = curl_slist_append(list, header) }
        defer { curl_slist_free_all(list) }
        _ = ccurl_easy_setopt_string(handle, CURLOPT_URL, url)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_TIMEOUT, timeout)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = ccurl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = ccurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        _ = ccurl_easy_setopt_callback(handle, CURLOPT_WRITEFUNCTION, bodyCallback)
        _ = ccurl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        if let form {
            // COPYPOSTFIELDS: libcurl keeps its own copy, so the Swift string need not outlive this call.
            _ = ccurl_easy_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, form)
        }
        let code = withExtendedLifetime(sink) { curl_easy_perform(handle) }
        guard code == CURLE_OK else {
            if sink.overflowed { throw HeraldError(.unavailable, "\(url) answered more than \(maxBytes) bytes") }
            throw HeraldError(.unavailable, "\(url): \(String(cString: curl_easy_strerror(code)))")
        }
        var status = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return Answer(status: status, body: sink.data)
    }
}

/// Collects an answer body up to a limit (libcurl's write callback).
private final class Sink {
    let limit: Int
    var data = Data()
    var overflowed = false

    init(limit: Int) { self.limit = limit }
}

private let bodyCallback: ccurl_data_callback = { buffer, size, count, userdata in
    guard let buffer, let userdata else { return 0 }
    let sink = Unmanaged<Sink>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    guard sink.data.count + length <= sink.limit else {
        sink.overflowed = true
        return 0  // stops the transfer
    }
    sink.data.append(UnsafeRawPointer(buffer).assumingMemoryBound(to: UInt8.self), count: length)
    return length
}
