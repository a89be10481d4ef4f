import Foundation
import HeraldCore
import Testing

@testable import HeraldCLI

/// `webhooks.*`: named endpoints with their secrets (file or environment) and events, and the retry schedule.
@Suite struct WebhookConfigurationTests {
    let loader = ConfigurationLoaderTests()
    let secret = String(repeating: "k", count: 32)

    @Test func endpointsComeFromTheirSectionsWithSecretsFromTheEnvironment() async throws {
        let none = try await loader.load("project: {id: acme}")
        #expect(none.webhooks.endpoints.isEmpty)
        #expect((none.webhooks.timeout, none.webhooks.maxAttempts) == (10, 24))

        let configuration = try await loader.load(
            """
            webhooks:
              timeout: 3s
              backoffBase: 5s
              crm: {url: "https://crm.example.com/hooks", events: [bounced, redeemed]}
              local: {url: "http://127.0.0.1:8080/hooks", secret: \(secret)}
            """, environment: ["HERALD_WEBHOOKS_CRM_SECRET": "env-" + secret])
        #expect(configuration.webhooks.timeout == 3 && configuration.webhooks.backoffBase == 5)
        let crm = try #require(configuration.webhooks.endpoint(named: "crm"))
        #expect(crm.secret == "env-" + secret)
        #expect(crm.events == [.bounced, .redeemed])
        #expect(configuration.webhooks.endpoint(named: "local")?.events == Set(WebhookEvent.allCases))
    }

    @Test func badEndpointsNameTheirKey() async {
        let problems = [
            ("webhooks: {crm: {url: \"http://crm.example.com\", secret: \(secret)}}", "webhooks.crm.url: expected an https URL"),
            ("webhooks: {crm: {url: \"https://crm.example.com\"}}", "webhooks.crm.secret: is required"),
            ("webhooks: {crm: {url: \"https://crm.example.com\", secret: \(secret), events: [opened]}}", "unknown event 'opened'"),
            ("webhooks: {crm: {url: \"https://crm.example.com\", secret: \(secret), evnts: [sent]}}", "webhooks.crm.evnts: unknown"),
            ("webhooks: {backoffBase: 1h, backoffCap: 1m}", "webhooks.backoffCap"),
        ]
        for (yaml, expected) in problems {
            let problem = await loader.problem(yaml)
            #expect(problem?.contains(expected) == true, "\(yaml): \(problem ?? "accepted")")
        }
    }
}
