import HTTPTypes
import HeraldCore
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing

@testable import HeraldServer

/// `server.accessLog`: one line per request with its method, path (never the query), status, duration and client.
@Suite struct AccessLogTests {
    /// The records a logger was given.
    final class Records: Sendable {
        let records = Mutex<[(message: String, metadata: Logger.Metadata)]>([])

        var logger: Logger {
            Logger(label: "herald.access") { _ in Handler(records: self) }
        }

        struct Handler: LogHandler {
            let records: Records
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .warning  // the responder must raise it to info

            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }

            func log(event: LogEvent) {
                records.records.withLock { $0.append((event.message.description, event.metadata ?? [:])) }
            }
        }
    }

    struct Broken: Error {}

    static func application(enabled: Bool, records: Records) -> some ApplicationProtocol {
        let inner = CallbackResponder<HeraldRequestContext> { request, _ in
            switch request.uri.path {
            case "/missing": throw HTTPError(.notFound)
            case "/broken": throw Broken()
            default: return Response(status: .ok)
            }
        }
        return Application(
            responder: AccessLogResponder(inner, enabled: enabled, trustedProxies: [], logger: records.logger),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    @Test func oneLinePerRequestWithoutItsQueryBodyOrHeaders() async throws {
        let records = Records()
        try await Self.application(enabled: true, records: records).test(.router) { client in
            _ = try await client.execute(
                uri: "/v1/accounts:resetPassword?key=secret-api-key&oobCode=secret-code", method: .post,
                headers: [.authorization: "Bearer secret-token"], body: ByteBuffer(string: #"{"newPassword":"secret-password"}"#))
            _ = try await client.execute(uri: "/missing?oobCode=another-secret", method: .get)
            _ = try await client.execute(uri: "/broken", method: .get)
        }
        let lines = records.records.withLock { $0 }
        try #require(lines.count == 3)
        let (message, metadata) = lines[0]
        #expect(message.hasPrefix("POST /v1/accounts:resetPassword 200 ") && message.hasSuffix(" ms"), "\(message)")
        #expect(metadata["method"] == "POST")
        #expect(metadata["path"] == "/v1/accounts:resetPassword")
        #expect(metadata["status"] == "200")
        #expect(Double("\(metadata["duration_ms"] ?? "")").map { $0 >= 0 } == true)
        #expect(metadata["client"] != nil)
        #expect(Set(metadata.keys) == ["method", "path", "status", "duration_ms", "client"])
        #expect(lines[1].metadata["path"] == "/missing" && lines[1].metadata["status"] == "404")
        #expect(lines[2].metadata["status"] == "500")
        let everything = lines.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in ["secret-api-key", "secret-code", "another-secret", "secret-token", "secret-password", "?"] {
            #expect(!everything.contains(secret), "\(secret)")
        }
    }

    @Test func offByDefault() async throws {
        let records = Records()
        #expect(HeraldConfiguration.Server().accessLog == false)
        try await Self.application(enabled: false, records: records).test(.router) { client in
            let response = try await client.execute(uri: "/x", method: .get)
            #expect(response.status == .ok)
        }
        #expect(records.records.withLock { $0.isEmpty })
    }

    @Test func theLineDropsAnyQueryOrFragmentLeftInThePath() {
        let line = AccessLogResponder<CallbackResponder<HeraldRequestContext>>.line(
            method: "GET", path: "/__/auth/action?mode=resetPassword&oobCode=x#frag", status: 200, milliseconds: 1.26, client: nil)
        #expect(line.message.description == "GET /__/auth/action 200 1.3 ms")
        #expect(line.metadata["path"] == "/__/auth/action")
        #expect(line.metadata["client"] == "-")
    }
}
