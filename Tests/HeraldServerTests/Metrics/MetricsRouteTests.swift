import HTTPTypes
import HeraldCore
import HeraldServer
import Hummingbird
import HummingbirdTesting
import Testing

/// `GET /metrics` through the real router: the text format's content type, the outbox gauges read from the
/// ledger, and `server.metricsToken`.
@Suite struct MetricsRouteTests {
    @Test func metricsAnswerInPrometheusTextWithTheOutboxGauges() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let response = try await client.execute(uri: "/metrics", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
            #expect(response.text.contains("# TYPE herald_outbox_messages gauge"))
            #expect(response.text.contains(#"herald_outbox_messages{state="queued",action="verify-email"} 0"#))
        }
    }

    @Test func metricsTokenIsRequiredOnceSet() async throws {
        let app = try TestServer { $0.server.metricsToken = "scrape-secret" }.application()
        try await app.test(.router) { client in
            #expect(try await client.execute(uri: "/metrics", method: .get).status == .unauthorized)
            let wrong = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer nope"])
            #expect(wrong.status == .unauthorized)
            let right = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer scrape-secret"])
            #expect(right.status == .ok)
        }
    }
}
