import Foundation
import HeraldCore
import Testing

@testable import HeraldCLI

@Suite struct ConfigurationLoaderTests {
    func load(_ yaml: String, environment: [String: String] = [:]) async throws -> HeraldConfiguration {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).yaml").path
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await ConfigurationLoader.load(path: path, environment: environment)
    }

    func problem(_ yaml: String, environment: [String: String] = [:]) async -> String? {
        do {
            _ = try await load(yaml, environment: environment)
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// Also proves every key `config/herald.yaml` documents is one Herald reads (unknown keys stop start-up).
    @Test func shippedConfigLoadsAsIs() async throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config/herald.yaml").path
        let configuration = try await ConfigurationLoader.load(path: path, environment: [:])
        #expect(configuration.smtp.url.hasPrefix("smtp://127.0.0.1:"))
        #expect(configuration.links.lifetime[.signIn] == 21_600)
    }

    @Test func readsEveryKindOfValue() async throws {
        let configuration = try await load(
            """
            project: {id: acme, apiKey: k, appName: Acme}
            links:
              authorizedDomains: [acme.example, localhost]
              defaultLocale: pl
              lifetime: {signIn: 30m, resetPassword: 2h}
            smtp: {url: "smtps://mail.acme.example:465", requireStartTLS: true, connections: 4, timeout: 20s}
            worker: {maxAttempts: 5, backoffBase: 10s, maxQueueWait: {signIn: 5m}}
            """)
        // Links go to Herald's own action page, at the listener unless server.publicUrl says otherwise.
        #expect(configuration.links.actionURL == "http://127.0.0.1:9099/__/auth/action")
        #expect(configuration.smtp.url == "smtps://mail.acme.example:465")
        #expect(configuration.links.authorizedDomains == ["acme.example", "localhost"])
        #expect(configuration.links.defaultLocale.value == "pl")
        #expect(configuration.links.lifetime[.signIn] == 1800)
        #expect(configuration.links.lifetime[.verifyEmail] == 259_200)
        #expect(configuration.smtp.requireStartTLS)
        #expect(configuration.smtp.connections == 4)
        #expect(configuration.smtp.timeout == 20)
        #expect(configuration.worker.maxAttempts == 5)
        #expect(configuration.worker.maxQueueWait[.signIn] == 300)
    }

    @Test func environmentOverridesTheFile() async throws {
        let configuration = try await load(
            "smtp: {password: from-file, url: 'smtp://a:25'}\nworker: {maxAttempts: 3}",
            environment: ["HERALD_SMTP_PASSWORD": "from-env", "HERALD_WORKER_MAX_ATTEMPTS": "9", "HERALD_LINKS_LIFETIME_SIGN_IN": "1h"])
        #expect(configuration.smtp.password == "from-env")
        #expect(configuration.worker.maxAttempts == 9)
        #expect(configuration.links.lifetime[.signIn] == 3600)
    }

    @Test func invalidValuesNameTheirKey() async {
        let cases: [(String, String)] = [
            ("smtp: {url: 'http://mail.example'}", "smtp.url"),
            ("smtp: {connections: many}", "smtp.connections"),
            ("smtp: {requireStartTLS: maybe}", "smtp.requireStartTLS"),
            ("smtp: {from: 'not an address'}", "smtp.from"),
            ("links: {lifetime: {signIn: soon}}", "links.lifetime.signIn"),
            ("links: {authorizedDomains: ['bad domain']}", "links.authorizedDomains"),
            ("links: {defaultLocale: '???'}", "links.defaultLocale"),
            ("worker: {backoffBase: 10m, backoffCap: 1m}", "worker.backoffCap"),
            ("worker: {maxAttempts: 0}", "worker.maxAttempts"),
            ("smtp: {url: [a, b]}", "smtp.url"),
        ]
        for (yaml, key) in cases {
            let message = await problem(yaml)
            #expect(message?.hasPrefix("INVALID_CONFIGURATION : \(key):") == true, "\(yaml) → \(message ?? "accepted")")
            #expect(message?.contains("\n") == false)
        }
    }

    @Test func theFinalDotsTimeoutAndTheResendsOfPossiblyDeliveredMailAreConfigured() async throws {
        let defaults = try await load("project: {id: acme}")
        #expect((defaults.smtp.dataTimeout, defaults.worker.maxUncertainRetries, defaults.worker.lease) == (600, 1, 1800))
        let set = try await load(
            "smtp: {dataTimeout: 2m}\nworker: {maxUncertainRetries: 0}", environment: ["HERALD_SMTP_DATA_TIMEOUT": "90s"])
        #expect((set.smtp.dataTimeout, set.worker.maxUncertainRetries) == (90, 0))
        #expect(await problem("worker: {maxUncertainRetries: 11}")?.hasPrefix("INVALID_CONFIGURATION : worker.maxUncertainRetries:") == true)
        #expect(await problem("smtp: {dataTimeout: 0s}")?.hasPrefix("INVALID_CONFIGURATION : smtp.dataTimeout:") == true)
        // The lease covers two exchanges that each wait out every timeout, the final dot's included.
        let short = await problem("worker: {lease: 5m}")
        #expect(short?.hasPrefix("INVALID_CONFIGURATION : worker.lease: 5m is shorter than two SMTP exchanges") == true, "\(short ?? "accepted")")
        #expect(short?.contains("smtp.dataTimeout") == true)
        #expect(try await load("smtp: {dataTimeout: 60s}\nworker: {lease: 5m}").worker.lease == 300)
    }

    @Test func messageRetentionIsOffByDefaultAndAtLeastThirtyDays() async throws {
        #expect(try await load("project: {id: acme}").ledger.messageRetention == 0)
        #expect(try await load("ledger: {messageRetention: 400d}").ledger.messageRetention == 400 * 86_400)
        #expect(
            try await load("ledger: {messageRetention: 0}", environment: ["HERALD_LEDGER_MESSAGE_RETENTION": "30d"]).ledger.messageRetention
                == 30 * 86_400)
        let short = await problem("ledger: {messageRetention: 7d}")
        #expect(
            short == "INVALID_CONFIGURATION : ledger.messageRetention: must be 0 (keep every message) or at least 30d, got 7d",
            "\(short ?? "accepted")")
    }

    @Test func theMessageArchiveIsOffByDefaultAndNamedByTheFileOrTheEnvironment() async throws {
        #expect(try await load("project: {id: acme}").ledger.archive == "")
        #expect(try await load("ledger: {archive: /var/lib/herald/archive}").ledger.archive == "/var/lib/herald/archive")
        #expect(try await load("ledger: {archive: ''}", environment: ["HERALD_LEDGER_ARCHIVE": "/srv/archive"]).ledger.archive == "/srv/archive")
    }

    @Test func aShortOrRepetitiveAdminTokenStopsStartUpNamingTheKeyAndTheMinimum() async throws {
        for weak in ["a", "test-admin-token", String(repeating: "ab", count: 20)] {
            let message = try #require(await problem("server: {adminToken: \"\(weak)\"}"))
            #expect(message.contains("server.adminToken") && message.contains("at least 32 bytes"), "\(message)")
            #expect(!message.contains(weak) || weak == "a", "the token itself is never shown: \(message)")
            #expect(!message.contains("\n"))
        }
        let strong = "3f9c1d7e5a2b8c4d6e0f1a2b3c4d5e6f"
        #expect(try await load("server: {adminToken: \"\(strong)\"}").server.adminToken == strong)
        #expect(try await load("server: {adminToken: \"\"}").server.adminToken == "")
    }

    @Test func theConsoleReadTokenIsAsStrongAsTheAdminTokenDifferentAndNeedsIt() async throws {
        let admin = "3f9c1d7e5a2b8c4d6e0f1a2b3c4d5e6f"
        let reader = "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"
        let loaded = try await load("server: {adminToken: \"\(admin)\", consoleReadToken: \"\(reader)\"}")
        #expect(loaded.server.consoleReadToken == reader)
        let weak = try #require(await problem("server: {adminToken: \"\(admin)\", consoleReadToken: \"short\"}"))
        #expect(weak.contains("server.consoleReadToken") && weak.contains("at least 32 bytes"), "\(weak)")
        let alone = try #require(await problem("server: {consoleReadToken: \"\(reader)\"}"))
        #expect(alone.contains("server.consoleReadToken") && alone.contains("needs server.adminToken"), "\(alone)")
        let same = try #require(await problem("server: {adminToken: \"\(admin)\", consoleReadToken: \"\(admin)\"}"))
        #expect(same.contains("must differ from server.adminToken") && !same.contains(admin), "\(same)")
    }

    @Test func missingFileIsAClearError() async {
        let message =
            await {
                do {
                    _ = try await ConfigurationLoader.load(path: "/nonexistent/herald.yaml", environment: [:])
                    return nil
                } catch { return "\(error)" }
            }() as String?
        #expect(message?.contains("/nonexistent/herald.yaml") == true)
    }

    @Test func passwordNeverAppearsInErrors() async {
        let message = await problem("smtp: {password: hunter2, connections: lots}")
        #expect(message?.contains("hunter2") == false)
    }

    @Test func accountOwnerIsHeraldUnlessTheAppOwnsThem() async throws {
        #expect(try await load("project: {id: acme}").accounts.owner == .herald)
        #expect(try await load("accounts: {owner: app}").accounts.owner == .app)
        #expect(try await load("project: {id: acme}", environment: ["HERALD_ACCOUNTS_OWNER": "app"]).accounts.owner == .app)
        let message = await problem("accounts: {owner: nobody}")
        #expect(message == "INVALID_CONFIGURATION : accounts.owner: expected herald or app, got 'nobody'")
    }

    @Test func misspelledKeyStopsStartUpNamingTheNearestKey() async {
        let message = await problem("smtp: {url: 'smtp://a:25', timout: 5s}")
        #expect(message == "INVALID_CONFIGURATION : smtp.timout: unknown configuration key (did you mean smtp.timeout?)")
        let wrongCase = await problem("smtp: {Timeout: 5s}")
        #expect(wrongCase == "INVALID_CONFIGURATION : smtp.Timeout: unknown configuration key (did you mean smtp.timeout?)")
    }

    @Test func unknownKeyWithNoNearMatchGetsNoSuggestion() async {
        #expect(await problem("colour: blue") == "INVALID_CONFIGURATION : colour: unknown configuration key")
        let database = await problem("database: {engine: 'sqlite'}")
        #expect(database == "INVALID_CONFIGURATION : database.engine: unknown configuration key")
    }

    @Test func databaseURLNamesPostgreSQLOrSQLiteAndNothingElse() async {
        let message = await problem("database: {url: 'mysql://h/x'}")
        #expect(message == "INVALID_CONFIGURATION : database.url: expected postgres://user@host:port/database or sqlite:PATH")
        #expect(await problem("database: {url: 'sqlite:'}") == "INVALID_CONFIGURATION : database.url: sqlite: names no file")
        let sqlite = try? await load("database: {url: 'sqlite:var/other.sqlite'}", environment: [:])
        #expect(sqlite?.database.path == "var/other.sqlite" && sqlite?.database.url == "")
        let postgres = try? await load("database: {url: 'postgres://herald@db:5432/herald', poolSize: 4}", environment: [:])
        #expect(postgres?.database.url == "postgres://herald@db:5432/herald" && postgres?.database.poolSize == 4)
    }

    @Test func keysOfAnUnknownSectionAreReported() async {
        let misspelled = await problem("databse:\n  path: var/x.sqlite\n")
        #expect(
            misspelled == "INVALID_CONFIGURATION : databse.path: unknown configuration key (did you mean database.path?)")
        let nested = await problem("metrics: {exporter: {port: 9100}}")
        #expect(nested == "INVALID_CONFIGURATION : metrics.exporter.port: unknown configuration key")
    }

    @Test func anEmptySectionIsNotAnUnknownKey() async throws {
        let configuration = try await load("policy:\n  # cooldown: 5s\nproject: {id: acme}\n")
        #expect(configuration.project.id == "acme")
    }

    @Test func everyMapValuedKeyIsKnown() async throws {
        let configuration = try await load(
            """
            links: {lifetime: {signIn: 1h, verifyEmail: 1h, resetPassword: 1h, verifyAndChangeEmail: 1h, recoverEmail: 1h}}
            worker: {maxQueueWait: {signIn: 1m, resetPassword: 1m}}
            """)
        #expect(configuration.links.lifetime[.recoverEmail] == 3600)
    }

    @Test func environmentVariablesFarFromEveryKeyAreLeftAlone() async throws {
        let configuration = try await load("project: {id: acme}", environment: ["HERALD_SOMETHING_ELSE": "x"])
        #expect(configuration.project.id == "acme")
    }

    @Test func aMistypedEnvironmentVariableIsNamedWithTheNearestKey() async throws {
        let message = await problem("project: {id: acme}", environment: ["HERALD_SMTP_TIMOUT": "5s"])
        #expect(message?.hasSuffix("HERALD_SMTP_TIMOUT: unknown configuration variable (did you mean HERALD_SMTP_TIMEOUT?)") == true)
    }

    @Test func variablesOfKeysWithDigitsWorkAsWrittenAndAsTheLibrarySpellsThem() async throws {
        let natural = try await load("project: {id: acme}", environment: ["HERALD_LIMITS_IPV6_CLIENT_PREFIX": "48"])
        #expect(natural.limits.ipv6ClientPrefix == 48)
        let library = try await load("project: {id: acme}", environment: ["HERALD_LIMITS_IPV6CLIENT_PREFIX": "56"])
        #expect(library.limits.ipv6ClientPrefix == 56)
        #expect(ConfigurationParser.environmentName(of: "dkim.ed25519KeyFile") == "HERALD_DKIM_ED25519_KEY_FILE")
        #expect(ConfigurationParser.environmentName(of: "smtp.requireStartTLS") == "HERALD_SMTP_REQUIRE_START_TLS")
    }

    @Test func thePublicURLIsTheActionPagesBase() async throws {
        let behindProxy = try await load("server: {publicUrl: 'https://auth.example.com/'}")
        #expect(behindProxy.server.publicURL == "https://auth.example.com")
        #expect(behindProxy.links.actionURL == "https://auth.example.com/__/auth/action")
        let wildcard = try await load("server: {host: '::', port: 8080}")
        #expect(wildcard.links.actionURL == "http://[::1]:8080/__/auth/action")
        let set = try await load("server: {publicUrl: 'https://auth.example.com'}\nlinks: {actionUrl: 'https://acme.firebaseapp.com/__/auth/action'}")
        #expect(set.links.actionURL == "https://acme.firebaseapp.com/__/auth/action")
        #expect(await problem("server: {publicUrl: 'auth.example.com'}")?.contains("server.publicUrl") == true)
    }

    @Test func noRelayIsBuiltIn() async throws {
        #expect(try await load("project: {id: acme}").smtp.url == "")
    }

    @Test func failureGraceIsADuration() async throws {
        #expect(try await load("server: {failureGrace: 250ms}").server.failureGrace == 0.25)
        #expect(await problem("server: {failureGrace: soon}")?.contains("server.failureGrace") == true)
    }
}
