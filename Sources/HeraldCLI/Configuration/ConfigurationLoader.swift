import Configuration
import Foundation
import HeraldCore
import HeraldMail
import Synchronization
import SystemPackage
import Yams

/// Reads `HeraldConfiguration` from a YAML file with `HERALD_…` environment overrides.
///
/// Precedence: environment > file > built-in defaults. Every value is checked; the first problem
/// is reported as one line naming the key, e.g. `smtp.url: expected smtp:// or smtps://, got 'http://x'`.
/// A key in the file that Herald does not read stops start-up too, naming the nearest known key.
public enum ConfigurationLoader {
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) async throws
        -> HeraldConfiguration
    {
        let file: FileProvider<YAMLSnapshot>
        do {
            file = try await FileProvider<YAMLSnapshot>(filePath: FilePath(path), allowMissing: false)
        } catch {
            throw HeraldError(.invalidConfiguration, "cannot read config file \(path): \(Self.oneLine(error))")
        }
        // Providers' client secrets (`HERALD_PROVIDERS_GOOGLE_CLIENT_SECRET`, `…_OIDC_<NAME>_CLIENT_SECRET`) too.
        let clientSecrets = environment.keys.filter { $0.hasPrefix("HERALD_PROVIDERS_") && $0.hasSuffix("_CLIENT_SECRET") }
        // Webhook endpoints' signing secrets (`HERALD_WEBHOOKS_<NAME>_SECRET`).
        let webhookSecrets = environment.keys.filter { $0.hasPrefix("HERALD_WEBHOOKS_") && $0.hasSuffix("_SECRET") }
        let secrets = Set(clientSecrets).union(webhookSecrets).union([
            "HERALD_SMTP_PASSWORD", "HERALD_PROJECT_API_KEY", "HERALD_SERVER_ADMIN_TOKEN", "HERALD_SERVER_TOKEN_SECRET",
            "HERALD_PROVIDERS_TWITTER_CONSUMER_SECRET", "HERALD_SERVER_METRICS_TOKEN", "HERALD_SERVER_CONSOLE_READ_TOKEN",
        ])
        let env = EnvironmentVariablesProvider(
            environmentVariables: ConfigurationParser.withLibrarySpellings(environment), secretsSpecifier: .specific(secrets)
        ).prefixKeys(with: "herald")
        let keys = try fileKeys(path)
        let parser = ConfigurationParser(
            reader: ConfigReader(providers: [env, file]), oidcNames: ConfigurationParser.oidcNames(in: keys),
            webhookNames: ConfigurationParser.webhookNames(in: keys))
        let configuration = try await parser.parse()
        try parser.rejectUnknownKeys(keys)
        try parser.rejectMistypedVariables(in: environment)
        return configuration
    }

    /// The file's dotted leaf keys (`smtp.timeout`, `links.lifetime.signIn`), named as swift-configuration names them.
    static func fileKeys(_ path: String) throws -> [String] {
        do {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            guard let mapping = try Yams.compose(yaml: text)?.mapping else { return [] }
            return leafKeys(mapping, prefix: [])
        } catch {
            throw HeraldError(.invalidConfiguration, "cannot read config file \(path): \(Self.oneLine(error))")
        }
    }

    private static func leafKeys(_ mapping: Yams.Node.Mapping, prefix: [String]) -> [String] {
        mapping.flatMap { key, value -> [String] in
            let path = prefix + [key.string ?? "\(key)"]
            guard let nested = value.mapping else { return [path.joined(separator: ".")] }
            return leafKeys(nested, prefix: path)
        }
    }

    /// Why an admin token is too weak to guard admin calls, if it is: shorter than 32 bytes, or of fewer than 8
    /// different characters (`aaaa…`, `abab…`). Empty is fine: it disables admin calls.
    static func adminTokenProblem(_ token: String) -> String? {
        guard !token.isEmpty else { return nil }
        guard token.utf8.count >= 32, Set(token.utf8).count >= 8 else {
            return "must be at least 32 bytes of 8 or more different characters, such as the output of "
                + "`openssl rand -hex 32` (or empty to disable admin calls)"
        }
        return nil
    }

    static func oneLine(_ error: any Error) -> String {
        "\(error)".split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}

/// Turns raw configuration values into a validated `HeraldConfiguration`.
///
/// Every key `parse()` asks for is recorded, so the loader can refuse keys in the file nobody reads.
struct ConfigurationParser {
    let reader: ConfigReader
    let asked = AskedKeys()
    /// The `<name>`s of the file's `providers.oidc.<name>` sections.
    var oidcNames: [String] = []
    /// The `<name>`s of the file's `webhooks.<name>` sections.
    var webhookNames: [String] = []

    /// The names under `providers.oidc` among a file's keys.
    static func oidcNames(in keys: [String]) -> [String] {
        Set(
            keys.compactMap { key -> String? in
                let parts = key.split(separator: ".")
                return parts.count == 4 && parts[0] == "providers" && parts[1] == "oidc" ? String(parts[2]) : nil
            }
        ).sorted()
    }

    /// `dkim.*`: off without a domain; with one, an RSA key is required and the domain must align with `smtp.from`.
    func parseBounces(_ c: inout HeraldConfiguration) async throws {
        c.bounces.domain = try await text("bounces.domain", c.bounces.domain) {
            $0.isEmpty || (try? EmailAddress("x@" + $0)) != nil ? nil : "expected a mail domain, e.g. bounces.example.com"
        }
        c.bounces.localPart = try await text("bounces.localPart", c.bounces.localPart) {
            $0.range(of: "^[A-Za-z0-9][A-Za-z0-9._-]{0,30}$", options: .regularExpression) == nil
                ? "expected letters, digits, '.', '_' or '-' (at most 31), without '+'" : nil
        }
        c.bounces.listenHost = try await text("bounces.listenHost", c.bounces.listenHost) { $0.isEmpty ? "must not be empty" : nil }
        c.bounces.listenPort = try await number("bounces.listenPort", c.bounces.listenPort, in: 0...65535)
        c.bounces.dialect = try await text("bounces.dialect", c.bounces.dialect) {
            ["lmtp", "smtp"].contains($0) ? nil : "expected lmtp or smtp, got '\($0)'"
        }
        c.bounces.softLimit = try await number("bounces.softLimit", c.bounces.softLimit, in: 1...1000)
        c.bounces.softWindow = try await duration("bounces.softWindow", c.bounces.softWindow, positive: true)
    }

    /// `log.*`, `server.metricsToken`, `server.accessLog` and the worker's metrics listener.
    func parseObservability(_ c: inout HeraldConfiguration) async throws {
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        c.log.level = try await text("log.level", c.log.level) {
            levels.contains($0) ? nil : "expected one of \(levels.joined(separator: ", ")), got '\($0)'"
        }
        let format = try await text("log.format", c.log.format.rawValue) {
            HeraldConfiguration.Log.Format(rawValue: $0) == nil ? "expected text or json, got '\($0)'" : nil
        }
        c.log.format = HeraldConfiguration.Log.Format(rawValue: format)!
        c.server.metricsToken = try await text("server.metricsToken", c.server.metricsToken, secret: true) { _ in nil }
        c.server.metricsGaugeInterval = try await duration("server.metricsGaugeInterval", c.server.metricsGaugeInterval, positive: false)
        c.server.accessLog = try await flag("server.accessLog", c.server.accessLog)
        c.worker.metricsHost = try await text("worker.metricsHost", c.worker.metricsHost) { $0.isEmpty ? "must not be empty" : nil }
        c.worker.metricsPort = try await number("worker.metricsPort", c.worker.metricsPort, in: 0...65535)
    }

    func parseDKIM(_ c: inout HeraldConfiguration) async throws {
        let selector = { (text: String) in
            text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy {
                $0.range(of: "^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$", options: .regularExpression) != nil
            } ? nil : "expected DNS labels (letters, digits, hyphens), got '\(text)'"
        }
        let keyFile = { (path: String) in path.isEmpty || FileManager.default.isReadableFile(atPath: path) ? nil : "cannot read '\(path)'" }
        c.dkim.domain = try await text("dkim.domain", c.dkim.domain) {
            $0.isEmpty || Hostname.isValid($0.lowercased()) ? nil : "'\($0)' is not a domain name"
        }.lowercased()
        c.dkim.selector = try await text("dkim.selector", c.dkim.selector, check: selector)
        c.dkim.rsaKeyFile = try await text("dkim.rsaKeyFile", c.dkim.rsaKeyFile, check: keyFile)
        c.dkim.ed25519KeyFile = try await text("dkim.ed25519KeyFile", c.dkim.ed25519KeyFile, check: keyFile)
        c.dkim.ed25519Selector = try await text("dkim.ed25519Selector", c.dkim.ed25519Selector, check: selector)
        guard !c.dkim.domain.isEmpty else { return }
        if c.dkim.rsaKeyFile.isEmpty {
            throw problem("dkim.rsaKeyFile", "is required when dkim.domain is set (`herald dkim keygen` writes one)")
        }
        if !c.dkim.ed25519KeyFile.isEmpty, c.dkim.ed25519Selector == c.dkim.selector {
            throw problem("dkim.ed25519Selector", "must differ from dkim.selector: each key needs a DNS record of its own")
        }
        let fromDomain = try Mailbox(parsing: c.smtp.from).address.domain.lowercased()
        if fromDomain != c.dkim.domain && !fromDomain.hasSuffix("." + c.dkim.domain) {
            throw problem(
                "dkim.domain",
                "\(c.dkim.domain) does not align with smtp.from's domain \(fromDomain): DMARC passes only when the From domain is "
                    + "dkim.domain or under it")
        }
    }

    func parse() async throws -> HeraldConfiguration {
        var c = HeraldConfiguration()
        c.project.id = try await text("project.id", c.project.id) {
            $0.range(of: "^[a-z0-9][a-z0-9-]{0,62}$", options: .regularExpression) != nil ? nil : "expected lower-case letters, digits and hyphens"
        }
        c.project.apiKey = try await text("project.apiKey", c.project.apiKey, secret: true) { $0.isEmpty ? "must not be empty" : nil }
        c.project.appName = try await text("project.appName", c.project.appName) {
            guard let name = try? DisplayName.validate($0) else { return "must be one line of at most 256 characters" }
            return name.isEmpty ? "must not be empty" : nil
        }

        c.server.host = try await text("server.host", c.server.host) { $0.isEmpty ? "must not be empty" : nil }
        c.server.port = try await number("server.port", c.server.port, in: 0...65535)
        c.server.publicURL = try await text("server.publicUrl", c.server.defaultPublicURL) {
            guard let url = URLComponents(string: $0), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false,
                url.query == nil, url.fragment == nil
            else {
                return "expected an absolute http(s) URL without a query, such as https://auth.example.com"
            }
            return nil
        }
        while c.server.publicURL.hasSuffix("/") { c.server.publicURL.removeLast() }
        c.links.actionURL = try await text("links.actionUrl", c.server.publicURL + "/__/auth/action") {
            guard let url = URLComponents(string: $0), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false else {
                return "expected an absolute http(s) URL"
            }
            return nil
        }
        c.links.authorizedDomains = try await list("links.authorizedDomains", ["localhost", "\(c.project.id).firebaseapp.com"]) {
            Hostname.isValid($0.lowercased()) ? nil : "'\($0)' is not a hostname"
        }.map { $0.lowercased() }
        let locale = try await text("links.defaultLocale", c.links.defaultLocale.value) { (try? LocaleTag($0)) == nil ? "not a language tag" : nil }
        c.links.defaultLocale = try LocaleTag(locale)
        for kind in ActionKind.allCases {
            c.links.lifetime[kind] = try await duration("links.lifetime.\(Self.key(kind))", c.links.lifetime[kind]!, positive: true)
        }

        c.smtp.url = try await text("smtp.url", c.smtp.url) {
            guard !$0.isEmpty else { return nil }  // refused by the commands that send (`Runtime.requireRelay`)
            guard let url = URLComponents(string: $0), ["smtp", "smtps"].contains(url.scheme?.lowercased() ?? "") else {
                return "expected smtp://host:port or smtps://host:port, got '\($0.contains("@") ? "<redacted>" : $0)'"
            }
            if url.user != nil || url.password != nil { return "put credentials in smtp.username and smtp.password, not in the URL" }
            return url.host?.isEmpty == false ? nil : "the URL has no host"
        }
        c.smtp.requireStartTLS = try await flag("smtp.requireStartTLS", c.smtp.requireStartTLS)
        c.smtp.username = try await text("smtp.username", c.smtp.username) { _ in nil }
        c.smtp.password = try await text("smtp.password", c.smtp.password, secret: true) { _ in nil }
        c.smtp.caFile = try await text("smtp.caFile", c.smtp.caFile) {
            $0.isEmpty || FileManager.default.isReadableFile(atPath: $0) ? nil : "cannot read '\($0)'"
        }
        c.smtp.insecure = try await flag("smtp.insecure", c.smtp.insecure)
        c.smtp.from = try await text("smtp.from", c.smtp.from) {
            (try? Mailbox(parsing: $0)) == nil ? "expected 'Name <address>' or an address" : nil
        }
        c.smtp.replyTo = try await text("smtp.replyTo", c.smtp.replyTo) {
            $0.isEmpty || (try? Mailbox(parsing: $0)) != nil ? nil : "expected 'Name <address>' or an address"
        }
        c.smtp.connectTimeout = try await duration("smtp.connectTimeout", c.smtp.connectTimeout, positive: true)
        c.smtp.timeout = try await duration("smtp.timeout", c.smtp.timeout, positive: true)
        c.smtp.dataTimeout = try await duration("smtp.dataTimeout", c.smtp.dataTimeout, positive: true)
        c.smtp.connections = try await number("smtp.connections", c.smtp.connections, in: 1...64)

        c.database.path = try await text("database.path", c.database.path) { $0.isEmpty ? "must not be empty" : nil }
        c.database.busyTimeout = try await duration("database.busyTimeout", c.database.busyTimeout, positive: true)
        c.database.url = try await text("database.url", c.database.url) {
            $0.isEmpty || $0.hasPrefix("postgres://") || $0.hasPrefix("postgresql://") || $0.hasPrefix("sqlite:")
                ? nil : "expected postgres://user@host:port/database or sqlite:PATH"
        }
        if c.database.url.hasPrefix("sqlite:") {
            c.database.path = String(c.database.url.dropFirst("sqlite:".count))
            c.database.url = ""
            if c.database.path.isEmpty { throw HeraldError(.invalidConfiguration, "database.url: sqlite: names no file") }
        }
        c.database.poolSize = try await number("database.poolSize", c.database.poolSize, in: 1...200)
        c.database.statementTimeout = try await duration("database.statementTimeout", c.database.statementTimeout, positive: true)
        c.tokens.keyFile = try await text("tokens.keyFile", c.tokens.keyFile) { _ in nil }
        c.tokens.mailKeyFile = try await text("tokens.mailKeyFile", c.tokens.mailKeyFile) { _ in nil }
        c.templatesDirectory = try await text("templates.directory", c.templatesDirectory) { $0.isEmpty ? "must not be empty" : nil }

        c.worker.batchSize = try await number("worker.batchSize", c.worker.batchSize, in: 1...10_000)
        c.worker.unrecordedPerConnection = try await number(
            "worker.unrecordedPerConnection", c.worker.unrecordedPerConnection, in: 1...1000)
        c.worker.maxAttempts = try await number("worker.maxAttempts", c.worker.maxAttempts, in: 1...100)
        c.worker.maxUncertainRetries = try await number("worker.maxUncertainRetries", c.worker.maxUncertainRetries, in: 0...10)
        c.worker.backoffBase = try await duration("worker.backoffBase", c.worker.backoffBase, positive: true)
        c.worker.backoffCap = try await duration("worker.backoffCap", c.worker.backoffCap, positive: true)
        if c.worker.backoffCap < c.worker.backoffBase {
            throw problem("worker.backoffCap", "must not be shorter than worker.backoffBase")
        }
        c.worker.lease = try await duration("worker.lease", c.worker.lease, positive: true)
        c.worker.pollInterval = try await duration("worker.pollInterval", c.worker.pollInterval, positive: true)
        for kind in [ActionKind.signIn, .resetPassword] {
            c.worker.maxQueueWait[kind] = try await duration("worker.maxQueueWait.\(Self.key(kind))", c.worker.maxQueueWait[kind]!, positive: true)
        }
        c.worker.maxQueueLifetime = try await duration("worker.maxQueueLifetime", c.worker.maxQueueLifetime, positive: true)
        c.worker.connectionBackoffBase = try await duration("worker.connectionBackoffBase", c.worker.connectionBackoffBase, positive: true)
        c.worker.connectionBackoffCap = try await duration("worker.connectionBackoffCap", c.worker.connectionBackoffCap, positive: true)
        if c.worker.connectionBackoffCap < c.worker.connectionBackoffBase {
            throw problem("worker.connectionBackoffCap", "must not be shorter than worker.connectionBackoffBase")
        }
        c.worker.heartbeatTimeout = try await duration("worker.heartbeatTimeout", c.worker.heartbeatTimeout, positive: true)
        let exchange = c.smtp.connectTimeout + c.smtp.timeout + c.smtp.dataTimeout
        if c.worker.lease < 2 * exchange {
            throw problem(
                "worker.lease",
                "\(DurationText.format(c.worker.lease)) is shorter than two SMTP exchanges; it must be at least "
                    + "2 × (smtp.connectTimeout + smtp.timeout + smtp.dataTimeout) = \(DurationText.format(2 * exchange)), "
                    + "or a slow send outlives its lease and another worker sends the row again")
        }
        c.server.adminToken = try await text("server.adminToken", c.server.adminToken, secret: true, check: ConfigurationLoader.adminTokenProblem)
        c.server.consoleReadToken = try await text(
            "server.consoleReadToken", c.server.consoleReadToken, secret: true, check: ConfigurationLoader.adminTokenProblem)
        if !c.server.consoleReadToken.isEmpty {
            guard !c.server.adminToken.isEmpty else {
                throw problem("server.consoleReadToken", "needs server.adminToken (without it there is no console)")
            }
            guard c.server.consoleReadToken != c.server.adminToken else {
                throw problem("server.consoleReadToken", "must differ from server.adminToken")
            }
        }
        c.server.allowEmulatorOwner = try await flag("server.allowEmulatorOwner", c.server.allowEmulatorOwner)
        c.server.emulatorMode = try await flag("server.emulatorMode", c.server.emulatorMode)
        c.server.enumerationProtection = try await flag("server.enumerationProtection", c.server.enumerationProtection)
        c.server.maxBodyBytes = try await number("server.maxBodyBytes", c.server.maxBodyBytes, in: 1024...16_777_216)
        c.server.tokenSecret = try await text("server.tokenSecret", c.server.tokenSecret, secret: true) {
            $0.isEmpty || $0.utf8.count >= 32 ? nil : "must be at least 32 characters (or empty for a per-process key)"
        }
        c.campaigns.unsubscribeMailto = try await text("campaigns.unsubscribeMailto", c.campaigns.unsubscribeMailto) {
            $0.isEmpty || (try? EmailAddress($0)) != nil ? nil : "expected an email address"
        }
        c.campaigns.unsubscribeURL = try await text("campaigns.unsubscribeUrl", c.campaigns.unsubscribeURL) {
            $0.isEmpty || URLComponents(string: $0)?.scheme == "https" ? nil : "expected an https URL"
        }
        c.campaigns.uploadDirectory = try await text("campaigns.uploadDirectory", c.campaigns.uploadDirectory) { _ in nil }
        c.campaigns.maxUploadBytes = try await number("campaigns.maxUploadBytes", c.campaigns.maxUploadBytes, in: 1024...1 << 40)
        try await parseDKIM(&c)
        try await parseBounces(&c)
        c.worker.maxRate = Double(try await number("worker.maxRate", Int(c.worker.maxRate), in: 0...1_000_000))
        c.server.failureGrace = try await duration("server.failureGrace", c.server.failureGrace, positive: false)
        c.server.maxConnections = try await number("server.maxConnections", c.server.maxConnections, in: 0...1_000_000)
        c.server.maxConnectionsPerClient = try await number(
            "server.maxConnectionsPerClient", c.server.maxConnectionsPerClient, in: 0...1_000_000)
        c.server.maxRequestsPerClient = try await number(
            "server.maxRequestsPerClient", c.server.maxRequestsPerClient, in: 0...1_000_000)
        c.server.idleTimeout = try await duration("server.idleTimeout", c.server.idleTimeout, positive: true)
        c.server.headerTimeout = try await duration("server.headerTimeout", c.server.headerTimeout, positive: true)
        c.server.bodyTimeout = try await duration("server.bodyTimeout", c.server.bodyTimeout, positive: true)
        c.server.maxHeaderBytes = try await number("server.maxHeaderBytes", c.server.maxHeaderBytes, in: 1024...1_048_576)
        c.server.maxHeaderCount = try await number("server.maxHeaderCount", c.server.maxHeaderCount, in: 16...10_000)
        let owner = try await text("accounts.owner", c.accounts.owner.rawValue) {
            HeraldConfiguration.Accounts.Owner(rawValue: $0) == nil ? "expected herald or app, got '\($0)'" : nil
        }
        c.accounts.owner = HeraldConfiguration.Accounts.Owner(rawValue: owner)!
        c.policy.cooldown = try await duration("policy.cooldown", c.policy.cooldown, positive: false)
        c.policy.dailyCap = try await number("policy.dailyCap", c.policy.dailyCap, in: 1...1_000_000)
        let typedCodes = try await text("policy.typedCodes", c.policy.typedCodes.rawValue) {
            HeraldConfiguration.Policy.TypedCodes(rawValue: $0) == nil ? "expected off, request, sign-in or all, got '\($0)'" : nil
        }
        c.policy.typedCodes = HeraldConfiguration.Policy.TypedCodes(rawValue: typedCodes)!
        c.policy.typedCodeLength = try await number("policy.typedCodeLength", c.policy.typedCodeLength, in: 6...10)
        let alphabet = try await text("policy.typedCodeAlphabet", c.policy.typedCodeAlphabet.rawValue) {
            TypedCode.Alphabet(rawValue: $0) == nil ? "expected digits or letters, got '\($0)'" : nil
        }
        c.policy.typedCodeAlphabet = TypedCode.Alphabet(rawValue: alphabet)!
        c.policy.typedCodeTries = try await number("policy.typedCodeTries", c.policy.typedCodeTries, in: 1...20)

        let proxies = try await list("limits.trustedProxies", []) { (try? IPNetwork($0)) == nil ? "'\($0)' is not an IP address or CIDR block" : nil }
        c.limits.trustedProxies = try proxies.map { try IPNetwork($0) }
        c.limits.ipSendsPerMinute = try await number("limits.ipSendsPerMinute", c.limits.ipSendsPerMinute, in: 0...1_000_000)
        c.limits.ipBurst = try await number("limits.ipBurst", c.limits.ipBurst, in: 0...1_000_000)
        c.limits.ipSendsPerHour = try await number("limits.ipSendsPerHour", c.limits.ipSendsPerHour, in: 0...100_000_000)
        c.limits.ipBadCodesPerMinute = try await number("limits.ipBadCodesPerMinute", c.limits.ipBadCodesPerMinute, in: 0...1_000_000)
        c.limits.accountSendsPerHour = try await number("limits.accountSendsPerHour", c.limits.accountSendsPerHour, in: 0...1_000_000)
        c.limits.projectSendsPerHour = try await number("limits.projectSendsPerHour", c.limits.projectSendsPerHour, in: 0...100_000_000)
        c.limits.projectSharePerNetwork = try await number("limits.projectSharePerNetwork", c.limits.projectSharePerNetwork, in: 0...100)
        c.limits.ipv6ClientPrefix = try await number("limits.ipv6ClientPrefix", c.limits.ipv6ClientPrefix, in: 32...128)
        c.limits.ignorePlusTags = try await flag("limits.ignorePlusTags", c.limits.ignorePlusTags)
        let dotless = try await list("limits.dotlessDomains", c.limits.dotlessDomains.sorted()) {
            Hostname.isValid($0) ? nil : "'\($0)' is not a domain name"
        }
        c.limits.dotlessDomains = Set(dotless.map { $0.lowercased() })
        c.limits.ipSignUpsPerHour = try await number("limits.ipSignUpsPerHour", c.limits.ipSignUpsPerHour, in: 0...1_000_000)
        c.limits.signInFailuresPerAccount = try await number(
            "limits.signInFailuresPerAccount", c.limits.signInFailuresPerAccount, in: 0...1_000_000)
        c.limits.ipSignInFailuresPerHour = try await number(
            "limits.ipSignInFailuresPerHour", c.limits.ipSignInFailuresPerHour, in: 0...1_000_000)
        c.ledger.eventRetention = try await duration("ledger.eventRetention", c.ledger.eventRetention, positive: false)
        c.ledger.messageRetention = try await duration("ledger.messageRetention", c.ledger.messageRetention, positive: false)
        c.ledger.archive = try await text("ledger.archive", c.ledger.archive) { _ in nil }
        try await parseObservability(&c)
        try await parseWebhooks(&c)
        c.providers = try await providers()
        if c.ledger.eventRetention > 0 && c.ledger.eventRetention < 86_400 {
            // The daily cap counts a day of suppressed requests; pruning them sooner than the outbox rows they
            // stand beside would let the cap tell registered addresses from unknown ones.
            throw problem("ledger.eventRetention", "must be 0 (keep everything) or at least 1d, got \(DurationText.format(c.ledger.eventRetention))")
        }
        let minimum = HeraldConfiguration.Ledger.minimumMessageRetention
        if c.ledger.messageRetention > 0 && c.ledger.messageRetention < minimum {
            throw problem(
                "ledger.messageRetention",
                "must be 0 (keep every message) or at least \(DurationText.format(minimum)), got \(DurationText.format(c.ledger.messageRetention))")
        }
        return c
    }

    /// The camelCase key of an action in the config file (`signIn`, `verifyEmail`, …).
    static func key(_ kind: ActionKind) -> String { kind.mode }

    /// `providers.google`, `providers.apple`, `providers.oidc.<name>` and `providers.twitter`; a provider is on
    /// when its section names a client id (a consumer key for Twitter).
    private func providers() async throws -> HeraldConfiguration.Providers {
        var providers = HeraldConfiguration.Providers()
        let known = [
            OIDCDefaults(
                section: "google", id: "google.com", issuer: "https://accounts.google.com",
                jwksURL: "https://www.googleapis.com/oauth2/v3/certs", authorizationURL: "https://accounts.google.com/o/oauth2/v2/auth",
                tokenURL: "https://oauth2.googleapis.com/token", trusted: true),
            // Apple's web flow answers with a cross-site form POST (response_mode=form_post), which the handler does
            // not take: apps sign in with Apple natively and send the ID token.
            OIDCDefaults(
                section: "apple", id: "apple.com", issuer: "https://appleid.apple.com", jwksURL: "https://appleid.apple.com/auth/keys",
                trusted: true),
        ]
        for defaults in known {
            if let provider = try await oidc(defaults) {
                providers.oidc.append(provider)
            }
        }
        for name in oidcNames {
            guard name.range(of: "^[a-z0-9][a-z0-9-]{0,62}$", options: .regularExpression) != nil else {
                throw problem("providers.oidc.\(name)", "expected a name of lower-case letters, digits and hyphens")
            }
            let prefix = "providers.oidc.\(name)"
            guard let provider = try await oidc(OIDCDefaults(section: "oidc.\(name)", id: "oidc.\(name)")) else {
                throw problem("\(prefix).clientId", "is required")
            }
            providers.oidc.append(provider)
        }
        let consumerKey = try await text("providers.twitter.consumerKey", "") { _ in nil }
        let consumerSecret = try await text("providers.twitter.consumerSecret", "", secret: true) { _ in nil }
        let apiBase = try await text("providers.twitter.apiBaseUrl", "https://api.twitter.com") { Self.httpURLProblem($0) }
        let twitterTrusted = try await flag("providers.twitter.trusted", false)
        if !consumerKey.isEmpty {
            guard !consumerSecret.isEmpty else {
                throw problem("providers.twitter.consumerSecret", "is required with a consumer key (set HERALD_PROVIDERS_TWITTER_CONSUMER_SECRET)")
            }
            providers.twitter = .init(consumerKey: consumerKey, consumerSecret: consumerSecret, apiBaseURL: apiBase, trusted: twitterTrusted)
        }
        providers.handlerURL = try await text("providers.handlerUrl", "") { url in
            guard !url.isEmpty else { return nil }
            if let problem = Self.httpURLProblem(url) { return problem }
            let path = URLComponents(string: url)?.path ?? ""
            return ["/__/auth/handler", "/emulator/auth/handler"].contains(path) && !url.contains("?") && !url.contains("#")
                ? nil : "expected the handler's URL, ending in /__/auth/handler or /emulator/auth/handler, got '\(url)'"
        }
        providers.appCallbacks = try await list("providers.appCallbacks", []) {
            $0.range(of: "^[A-Za-z][A-Za-z0-9+._-]*$", options: .regularExpression) == nil
                ? "'\($0)' is not a URL scheme or an Android package name" : nil
        }
        return providers
    }

    /// What Herald knows of a well-known OIDC provider; nothing for `oidc.<name>`.
    private struct OIDCDefaults {
        /// The provider's section under `providers.`: `google`, `apple`, `oidc.<name>`.
        var section: String
        var id: String
        var issuer = ""
        var jwksURL = ""
        var authorizationURL = ""
        var tokenURL = ""
        var trusted = false
    }

    /// One OIDC provider's section, or nil when it names no client id.
    private func oidc(_ defaults: OIDCDefaults) async throws -> HeraldConfiguration.Providers.OIDC? {
        let prefix = "providers.\(defaults.section)"
        let clientID = try await text("\(prefix).clientId", "") { _ in nil }
        let issuer = try await text("\(prefix).issuer", defaults.issuer) { $0.isEmpty && !clientID.isEmpty ? "is required" : nil }
        let url = try await text("\(prefix).jwksUrl", defaults.jwksURL) { $0.isEmpty ? nil : Self.httpURLProblem($0) }
        let file = try await text("\(prefix).jwksFile", "") { _ in nil }
        let trusted = try await flag("\(prefix).trusted", defaults.trusted)
        let authorization = try await text("\(prefix).authorizationUrl", defaults.authorizationURL) {
            $0.isEmpty ? nil : Self.httpURLProblem($0)
        }
        let token = try await text("\(prefix).tokenUrl", defaults.tokenURL) { $0.isEmpty ? nil : Self.httpURLProblem($0) }
        let secret = try await text("\(prefix).clientSecret", "", secret: true) { _ in nil }
        let scopes = try await list("\(prefix).scopes", HeraldConfiguration.Providers.OIDC.defaultScopes) {
            $0.contains(" ") || $0.isEmpty ? "'\($0)' is not one scope" : nil
        }
        guard !clientID.isEmpty else { return nil }
        guard !url.isEmpty || !file.isEmpty else { throw problem("\(prefix).jwksUrl", "is required (or jwksFile)") }
        var provider = HeraldConfiguration.Providers.OIDC(
            id: defaults.id, issuer: issuer, clientID: clientID, jwksURL: file.isEmpty ? url : "", jwksFile: file, trusted: trusted)
        provider.authorizationURL = authorization
        provider.tokenURL = token
        provider.clientSecret = secret
        provider.scopes = scopes
        return provider
    }

    static func httpURLProblem(_ value: String) -> String? {
        guard let url = URLComponents(string: value), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false
        else { return "expected an http(s) URL, got '\(value)'" }
        return nil
    }

    func problem(_ key: String, _ message: String) -> HeraldError {
        HeraldError(.invalidConfiguration, "\(key): \(message)")
    }

    func raw(_ key: String, secret: Bool = false) async throws -> String? {
        asked.insert(key)
        do {
            return try await reader.fetchString(forKey: ConfigKey(key), isSecret: secret)
        } catch {
            throw problem(key, "expected a single value")
        }
    }

    func text(_ key: String, _ fallback: String, secret: Bool = false, check: (String) -> String?) async throws -> String {
        let found = try await raw(key, secret: secret)
        let value = secret ? found ?? fallback : found?.trimmingCharacters(in: .whitespaces) ?? fallback
        if let message = check(value) { throw problem(key, message) }
        return value
    }

    func flag(_ key: String, _ fallback: Bool) async throws -> Bool {
        guard let value = try await raw(key) else { return fallback }
        switch value.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw problem(key, "expected true or false, got '\(value)'")
        }
    }

    func number(_ key: String, _ fallback: Int, in range: ClosedRange<Int>) async throws -> Int {
        guard let value = try await raw(key) else { return fallback }
        guard let number = Int(value), range.contains(number) else {
            throw problem(key, "expected a whole number from \(range.lowerBound) to \(range.upperBound), got '\(value)'")
        }
        return number
    }

    func duration(_ key: String, _ fallback: TimeInterval, positive: Bool) async throws -> TimeInterval {
        guard let value = try await raw(key) else { return fallback }
        guard let seconds = DurationText.parse(value), !positive || seconds > 0 else {
            throw problem(key, "expected a duration such as 90s, 15m, 6h or 3d, got '\(value)'")
        }
        return seconds
    }

    func list(_ key: String, _ fallback: [String], check: (String) -> String?) async throws -> [String] {
        asked.insert(key)
        let values: [String]
        do {
            values = try await reader.fetchStringArray(forKey: ConfigKey(key)) ?? fallback
        } catch {
            throw problem(key, "expected a list of values")
        }
        for value in values {
            if let message = check(value) { throw problem(key, message) }
        }
        return values
    }
}

extension ConfigurationParser {
    /// Fails on the first of `fileKeys` that `parse()` never asked for, suggesting the nearest key it did ask for.
    ///
    /// A known section with no keys under it (`policy:` with every line commented out) is fine. Call after
    /// `parse()`; `rejectMistypedVariables` checks the environment.
    func rejectUnknownKeys(_ fileKeys: [String]) throws {
        let known = asked.all
        let sections = Set(known.flatMap(Self.sections))
        let unknownKeys = fileKeys.filter { !known.contains($0) && !sections.contains($0) }
        guard let unknown = unknownKeys.min() else { return }
        guard let nearest = Self.nearest(to: unknown, in: known) else {
            throw problem(unknown, "unknown configuration key")
        }
        throw problem(unknown, "unknown configuration key (did you mean \(nearest)?)")
    }

    /// Fails on a `HERALD_…` environment variable that names no key `parse()` asked for but lies within two edits of
    /// one that does (`HERALD_SMTP_TIMOUT`), naming that one. Variables further from every key are left alone: other
    /// programs (and Herald's own test tools) use the prefix too.
    func rejectMistypedVariables(in environment: [String: String]) throws {
        let names = asked.all.map(Self.environmentName)
        let known = Set(names.map(Self.librarySpelling)).union(Self.variablesBesideKeys)
        let unknown = environment.keys.filter { $0.hasPrefix("HERALD_") && !known.contains(Self.librarySpelling($0)) }.sorted()
        for variable in unknown {
            guard let nearest = Self.nearest(to: variable, in: Set(names).union(Self.variablesBesideKeys), within: 2) else { continue }
            throw problem(variable, "unknown configuration variable (did you mean \(nearest)?)")
        }
    }

    /// Variables Herald reads that are no configuration key.
    static let variablesBesideKeys: Set<String> = ["HERALD_DATABASE_PASSWORD"]

    /// The environment variable that sets `key`: `HERALD_` and the key's parts in upper case, joined by underscores,
    /// with one more underscore wherever a word begins (`links.lifetime.signIn` → `HERALD_LINKS_LIFETIME_SIGN_IN`,
    /// `dkim.ed25519KeyFile` → `HERALD_DKIM_ED25519_KEY_FILE`).
    static func environmentName(of key: String) -> String {
        let parts = key.split(separator: ".").map { part -> String in
            var words = ""
            var previous: Character?
            for character in part {
                if let previous, previous.isLowercase || previous.isNumber, character.isUppercase { words.append("_") }
                words.append(character.isLetter || character.isNumber ? Character(character.uppercased()) : "_")
                previous = character
            }
            return words
        }
        return (["HERALD"] + parts).joined(separator: "_")
    }

    /// A variable as swift-configuration spells it, which starts a word after a lower-case letter only:
    /// `HERALD_DKIM_ED25519_KEY_FILE` is its `HERALD_DKIM_ED25519KEY_FILE`.
    static func librarySpelling(_ variable: String) -> String {
        variable.replacing(/([0-9])_([A-Z])/) { "\($0.1)\($0.2)" }
    }

    /// The environment with each `HERALD_` variable also under swift-configuration's spelling, so both
    /// `HERALD_DKIM_ED25519_KEY_FILE` (as documented) and `HERALD_DKIM_ED25519KEY_FILE` set `dkim.ed25519KeyFile`.
    static func withLibrarySpellings(_ environment: [String: String]) -> [String: String] {
        var spelled = environment
        for (name, value) in environment where name.hasPrefix("HERALD_") {
            let library = librarySpelling(name)
            if library != name, spelled[library] == nil { spelled[library] = value }
        }
        return spelled
    }

    /// The sections a key lies in: `links` and `links.lifetime` for `links.lifetime.signIn`.
    static func sections(of key: String) -> [String] {
        let parts = key.split(separator: ".")
        return parts.indices.dropFirst().map { parts[..<$0].joined(separator: ".") }
    }

    /// The key closest to `key` by edit distance, ignoring case, if it is within `limit` edits.
    static func nearest(to key: String, in known: Set<String>, within limit: Int = 3) -> String? {
        let scored = known.map { (distance: editDistance(key.lowercased(), $0.lowercased()), candidate: $0) }
        let best = scored.min { ($0.distance, $0.candidate) < ($1.distance, $1.candidate) }
        guard let best, best.distance <= limit else { return nil }
        return best.candidate
    }

    /// Levenshtein distance: the fewest single-character insertions, deletions and substitutions turning `a` into `b`.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let target = Array(b)
        var previous = Array(0...target.count)
        for (i, character) in a.enumerated() {
            var current = [i + 1]
            for (j, other) in target.enumerated() {
                let substitution = previous[j] + (character == other ? 0 : 1)
                current.append(min(previous[j + 1] + 1, current[j] + 1, substitution))
            }
            previous = current
        }
        return previous[target.count]
    }
}

/// The set of keys a `ConfigurationParser` asked for; a class so the parser's non-mutating lookups can record them.
final class AskedKeys: Sendable {
    private let keys = Mutex<Set<String>>([])

    func insert(_ key: String) {
        keys.withLock { _ = $0.insert(key) }
    }

    var all: Set<String> { keys.withLock { $0 } }
}
