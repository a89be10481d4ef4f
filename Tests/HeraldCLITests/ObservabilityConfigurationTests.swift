import Foundation
import HeraldCore
import Logging
import Testing

@testable import HeraldCLI

/// `log.*`, `server.metricsToken` and the worker's metrics listener, and the JSON log lines.
@Suite struct ObservabilityConfigurationTests {
    let loader = ConfigurationLoaderTests()

    @Test func logFormatAndMetricsKeysComeFromTheFileAndTheEnvironment() async throws {
        let defaults = try await loader.load("project: {id: acme}")
        #expect(defaults.log.format == .text)
        #expect(defaults.log.level == "info")
        #expect(defaults.worker.metricsPort == 0)
        #expect(defaults.server.metricsToken.isEmpty)

        let configuration = try await loader.load(
            """
            log: {format: json, level: debug}
            worker: {metricsHost: 0.0.0.0, metricsPort: 9464}
            """, environment: ["HERALD_SERVER_METRICS_TOKEN": "scrape-secret", "HERALD_LOG_FORMAT": "text"])
        #expect(configuration.log.format == .text)  // the environment wins
        #expect(configuration.log.level == "debug")
        #expect(configuration.worker.metricsHost == "0.0.0.0")
        #expect(configuration.worker.metricsPort == 9464)
        #expect(configuration.server.metricsToken == "scrape-secret")
    }

    @Test func accessLogIsOffUnlessTheFileOrTheEnvironmentTurnsItOn() async throws {
        #expect(try await loader.load("project: {id: acme}").server.accessLog == false)
        #expect(try await loader.load("server: {accessLog: true}").server.accessLog == true)
        let environment = try await loader.load("server: {accessLog: true}", environment: ["HERALD_SERVER_ACCESS_LOG": "false"])
        #expect(environment.server.accessLog == false)
        #expect(try await loader.load("project: {id: acme}", environment: ["HERALD_SERVER_ACCESS_LOG": "true"]).server.accessLog == true)
        #expect(await loader.problem("server: {accessLog: sometimes}")?.contains("server.accessLog: expected true or false") == true)
    }

    @Test func badLogAndMetricsValuesNameTheirKey() async {
        #expect(await loader.problem("log: {format: xml}")?.contains("log.format: expected text or json, got 'xml'") == true)
        #expect(await loader.problem("log: {level: loud}")?.contains("log.level: expected one of trace") == true)
        #expect(await loader.problem("worker: {metricsPort: 70000}")?.contains("worker.metricsPort") == true)
    }

    @Test func jsonLogLinesKeepTheirKeysInOrderAndEscapeWhatJSONNeeds() throws {
        let time = Date(timeIntervalSince1970: 1_795_000_000.125)
        let line = JSONLogHandler.line(
            time: time, level: .warning, label: "herald", message: "quote \" backslash \\ newline \n tab \t bell \u{7}",
            metadata: ["b": "2", "a": .array(["x", .dictionary(["k": "v"])]), "n": .stringConvertible(42)])
        #expect(line.hasSuffix("}\n"))
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(
            line
                == #"{"time":"2026-11-18T11:06:40.125Z","level":"warning","label":"herald","message":"quote \" backslash \\ newline \n tab \t bell \u0007","metadata":{"a":["x",{"k":"v"}],"b":"2","n":"42"}}"#
                + "\n")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["message"] as? String == "quote \" backslash \\ newline \n tab \t bell \u{7}")
    }
}
