import Foundation

/// Everything Herald is configured with, read once at start-up and passed down.
///
/// Defaults work for the local demo; `config/herald.yaml` documents every key.
public struct HeraldConfiguration: Sendable {
    public var project = Project()
    public var links = Links()
    public var smtp = SMTP()
    public var database = Database()
    public var worker = Worker()
    public var server = Server()
    public var policy = Policy()
    public var campaigns = Campaigns()
    public var dkim = DKIM()
    public var bounces = Bounces()
    public var accounts = Accounts()
    public var tokens = Tokens()
    public var limits = Limits()
    public var ledger = Ledger()
    public var providers = Providers()
    public var log = Log()
    public var webhooks = Webhooks()
    /// Directory holding `layout.html.mustache` and `<action>/<locale>/…` templates.
    public var templatesDirectory = "templates"

    public init() {}

    /// The Firebase project the links and API belong to.
    public struct Project: Sendable {
        public var id = "herald-demo"
        public var apiKey = "demo-api-key"
        public var appName = "Herald Demo"
        public init() {}
    }

    /// How action links are built and how long their codes live.
    public struct Links: Sendable {
        /// Base of every web action link; defaults to Herald's own action page, `<server.publicUrl>/__/auth/action`.
        public var actionURL = "http://127.0.0.1:9099/__/auth/action"
        public var authorizedDomains = ["localhost", "herald-demo.firebaseapp.com"]
        public var defaultLocale = try! LocaleTag("en")
        /// Code lifetime per action, counted from the moment the email is sent.
        public var lifetime: [ActionKind: TimeInterval] = [
            .signIn: 6 * 3600, .verifyEmail: 72 * 3600, .resetPassword: 3600, .verifyAndChangeEmail: 72 * 3600,
            .recoverEmail: 72 * 3600,
        ]
        public init() {}
    }

    /// The operator's SMTP server.
    public struct SMTP: Sendable {
        /// `smtp://host:port[/ehlo-name]` or `smtps://host:port[/ehlo-name]`.
        /// No default: `herald worker` and `herald serve` refuse to start without one (the shipped config sets one).
        public var url = ""
        /// Refuse to send unless the server upgrades the connection with STARTTLS.
        public var requireStartTLS = false
        public var username = ""
        public var password = ""
        /// A PEM bundle of CAs to trust instead of the system store.
        public var caFile = ""
        /// Skip certificate verification. For tests against self-signed servers only.
        public var insecure = false
        public var from = "Herald Demo <noreply@herald-demo.example>"
        public var replyTo = ""
        public var connectTimeout: TimeInterval = 10
        /// Each wait for the server: its greeting, a reply to a command, taking the message's content.
        public var timeout: TimeInterval = 60
        /// The wait for the reply to a message's final dot (RFC 5321 4.5.3.2.6: 10 minutes). The server may be
        /// delivering the message meanwhile; a timeout here leaves it possibly delivered, not unsent.
        public var dataTimeout: TimeInterval = 600
        /// Parallel SMTP connections the worker opens (one thread and one libcurl handle each).
        public var connections = 1
        public init() {}
    }

    /// The SQLite ledger.
    public struct Database: Sendable {
        /// The SQLite ledger, when `url` names no PostgreSQL server.
        public var path = "var/herald.sqlite"
        /// `postgres://user@host:port/database[?schema=name]` selects the PostgreSQL store (password from
        /// `HERALD_DATABASE_PASSWORD`); empty keeps SQLite at `path`. `sqlite:PATH` is read as `path`.
        public var url = ""
        /// PostgreSQL connections per process.
        public var poolSize = 8
        /// How long a statement waits for another process's write lock before the operation is
        /// retried (worker) or answered 503 (API); on PostgreSQL, every lock wait (`lock_timeout`).
        public var busyTimeout: TimeInterval = 10
        /// PostgreSQL: how long one statement may run (`statement_timeout`); Herald also stops waiting for an
        /// answer this long plus a few seconds after asking, closes the connection and treats the ledger as
        /// unavailable, so no thread waits for ever on a connection that died without a word.
        public var statementTimeout: TimeInterval = 30
        public init() {}
    }

    /// `herald serve`: the Identity Toolkit HTTP surface and the action pages.
    public struct Server: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port (printed on start-up).
        public var port = 9099
        /// Where browsers reach this server (its action pages and console): `links.actionUrl` defaults to it plus
        /// `/__/auth/action`. Defaults to the listener, `defaultPublicURL`.
        public var publicURL = "http://127.0.0.1:9099"
        /// `Authorization: Bearer <adminToken>` grants admin calls; empty disables them. At least 32 bytes of 8 or
        /// more different characters (the loader refuses weaker ones).
        public var adminToken = ""
        /// A second token that signs in to the `/admin` console for reading only: every page, no change (its `POST`s
        /// are refused). Never an admin credential for the API. Empty: none. Needs `adminToken`, as strong and different.
        public var consoleReadToken = ""
        /// Accept the Admin SDKs' emulator credential `Bearer owner`, from loopback only.
        public var allowEmulatorOwner = false
        /// Serve `GET /emulator/v1/projects/{p}/oobCodes`; codes then also live in memory, never on disk.
        public var emulatorMode = false
        /// Reveal nothing about which emails have accounts (Firebase's default since 2023).
        public var enumerationProtection = true
        public var maxBodyBytes = 65536
        /// HMAC key for the action pages' forms; empty means a random key per process.
        public var tokenSecret = ""
        /// After the embedded worker fails, `/health` answers 503 this long before the server drains and exits.
        public var failureGrace: TimeInterval = 5
        /// Most HTTP connections open at once; a further one closes an idle connection (of the client holding the
        /// most) and takes its place, or with none idle gets `503` and is closed. 0: 10,000, or what file
        /// descriptors allow if less (the soft limit, raised to the hard one at start-up, less 64 for the ledger and mail).
        public var maxConnections = 0
        /// Most HTTP connections open at once from one client (an IPv4 address or an IPv6 /64,
        /// `limits.ipv6ClientPrefix`); further ones get `429`. Trusted proxies are exempt. 0: no per-client cap.
        public var maxConnectionsPerClient = 128
        /// Most requests in flight at once from one client across all its connections (read and not yet
        /// answered); past it, that client's connections are not read until one of its requests is answered.
        /// Trusted proxies are exempt. 0: no per-client cap.
        public var maxRequestsPerClient = 16
        /// A connection with no request in progress is closed after this long.
        public var idleTimeout: TimeInterval = 30
        /// A request's head (request line and headers) must arrive within this long of its first byte, else `408`.
        public var headerTimeout: TimeInterval = 10
        /// A request's body must arrive within this long of its head, else `408`.
        public var bodyTimeout: TimeInterval = 30
        /// Largest request head (all header lines); larger ones get `431`-style `400` and the connection closes.
        public var maxHeaderBytes = 32 * 1024
        /// Most header fields in one request.
        public var maxHeaderCount = 100
        /// `Authorization: Bearer <metricsToken>` is required for `/metrics` (here and on the worker's metrics port)
        /// when set; empty serves it to anyone who can reach the port.
        public var metricsToken = ""
        /// How often `/metrics` counts the outbox for its gauges (a read of the whole table): a scrape within this
        /// long of the last count answers with the gauges as they are; 0 counts on every scrape.
        public var metricsGaugeInterval: TimeInterval = 10
        /// Log one line per HTTP request (label `herald.access`, at `info` whatever `log.level` says): method, path
        /// without its query string, status, duration in milliseconds and client address. Never a query string, a
        /// body or a header.
        public var accessLog = false
        public init() {}

        /// `http://<host>:<port>`, with a wildcard listener's loopback address in its place (`0.0.0.0` → `127.0.0.1`,
        /// `::` → `[::1]`) and an IPv6 host in brackets.
        public var defaultPublicURL: String {
            let reachable =
                switch host {
                case "0.0.0.0", "": "127.0.0.1"
                case "::", "[::]": "[::1]"
                default: host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
                }
            return "http://\(reachable):\(port)"
        }
    }

    /// What the processes log, and how: to standard error, as text or one JSON object per line.
    public struct Log: Sendable {
        /// `text`: swift-log's lines; `json`: one object per line with the keys `time`, `level`, `label`, `message`, `metadata`.
        public enum Format: String, Sendable, CaseIterable {
            case text, json
        }

        /// `trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`.
        public var level = "info"
        public var format = Format.text
        public init() {}
    }

    /// Abuse limits for sending action emails through the API.
    public struct Policy: Sendable {
        /// Minimum time between two emails of one action to one address.
        public var cooldown: TimeInterval = 60
        /// Most emails of one action to one address per 24 hours.
        public var dailyCap = 20
        /// Codes to type beside links: `off` (none, whatever a request asks), `request` (when a `sendOobCode` asks with
        /// `typedCode: true`), `sign-in` (email-link sign-in mail, and others when asked) or `all` (every action's mail
        /// but email recovery). A request's `typedCode: false` leaves the code out.
        public var typedCodes = TypedCodes.off
        /// How many characters a typed code has (6–10).
        public var typedCodeLength = 6
        /// What a typed code is made of: `digits`, or `letters` (23 upper-case letters and digits that no one
        /// misreads, typed in either case).
        public var typedCodeAlphabet = CodeAlphabet.digits
        /// Wrong tries a typed code survives; the next wrong one kills it (its link stays good).
        public var typedCodeTries = 5
        public init() {}

        public typealias CodeAlphabet = TypedCode.Alphabet

        public enum TypedCodes: String, Sendable, CaseIterable {
            case off, request
            case signIn = "sign-in"
            case all

            /// Whether mail of `kind` carries a typed code when its request did not say.
            public func covers(_ kind: ActionKind) -> Bool {
                switch self {
                case .off, .request: false
                case .signIn: kind == .signIn
                case .all: kind.takesTypedCode
                }
            }
        }
    }

    /// Abuse limits on app-initiated requests (API-key callers; admin callers are exempt). 0 turns a limit off.
    public struct Limits: Sendable {
        /// Peers (addresses or CIDR blocks) whose `X-Forwarded-For` is believed; the client is the right-most
        /// address in it that is not itself a trusted proxy.
        public var trustedProxies: [IPNetwork] = []
        /// Per client address (IPv6 by /64), in memory per process: emails requested per minute, a token bucket
        /// holding `ipBurst` requests.
        public var ipSendsPerMinute = 20
        public var ipBurst = 20
        /// Per client address, emails requested per hour.
        public var ipSendsPerHour = 500
        /// Per client address, attempts with codes that do not exist (action pages and API) per minute; beyond it
        /// they are answered as usual but not recorded at all.
        public var ipBadCodesPerMinute = 60
        /// Per account (the signed-in account, or the account an email is about), app emails per hour, from the ledger.
        public var accountSendsPerHour = 10
        /// The project's app-initiated emails per hour, from the ledger (`QUOTA_EXCEEDED` beyond).
        public var projectSendsPerHour = 10_000
        /// The most of `projectSendsPerHour`, in percent, one client network (IPv4 /24, IPv6 /48) may use in an
        /// hour, from the ledger; past it that network gets `TOO_MANY_ATTEMPTS` while every other is still served,
        /// so a flood from one network cannot spend the whole project's quota. 0: no share.
        public var projectSharePerNetwork = 10
        /// The prefix an IPv6 client is counted under by every per-client limit (connections, requests in flight,
        /// rates): 64, one host's addresses; 48 where one site hands out many /64s. IPv4 clients are single addresses.
        public var ipv6ClientPrefix = IPNetwork.defaultIPv6ClientPrefix
        /// Per-recipient limits (cooldown, daily cap, an unknown address's hourly quota) count `x+tag@` as `x@`.
        public var ignorePlusTags = true
        /// Domains whose mailboxes ignore dots in the local part, for the per-recipient limits (Gmail's by default;
        /// `googlemail.com` listed here counts as `gmail.com`).
        public var dotlessDomains = RecipientAliases.gmail
        /// Per client address, accounts an app may create per hour (Firebase's 100).
        public var ipSignUpsPerHour = 100
        /// Failed password sign-ins to one address before it is refused (then one more each 15 minutes), in memory.
        public var signInFailuresPerAccount = 10
        /// Per client address, failed password sign-ins per hour (guessing across many accounts).
        public var ipSignInFailuresPerHour = 100
        public init() {}

        /// The spellings the per-recipient limits count as one mailbox.
        public var recipientAliases: RecipientAliases {
            RecipientAliases(ignorePlusTags: ignorePlusTags, dotlessDomains: dotlessDomains)
        }

        /// The project quota's share of one client network (`projectSharePerNetwork`), in emails per hour; 0 for none.
        public var networkSendsPerHour: Int {
            guard projectSharePerNetwork > 0, projectSendsPerHour > 0 else { return 0 }
            return max(1, projectSendsPerHour * projectSharePerNetwork / 100)
        }
    }

    /// What the ledger keeps, and for how long.
    /// Identity providers for `accounts:signInWithIdp` (`providers:` in the file).
    public struct Providers: Sendable {
        /// An OpenID Connect provider: Google (`providers.google`), Apple (`providers.apple`) or `oidc.<name>`
        /// (`providers.oidc.<name>`).
        public struct OIDC: Sendable, Hashable {
            /// `google.com`, `apple.com`, `oidc.<name>`.
            public var id: String
            /// The ID tokens' `iss`.
            public var issuer: String
            /// The app's client id: the ID tokens' `aud`.
            public var clientID: String
            /// Where the signing keys are served (fetched with libcurl, cached), or read from `jwksFile`.
            public var jwksURL: String
            public var jwksFile: String
            /// Whether a verified email from this provider proves the address (it may then take over an
            /// unverified account with that email, as Firebase lets Google do).
            public var trusted: Bool
            /// The hosted sign-in handler's authorization-code flow: where the browser approves, where the
            /// handler exchanges the code, and the client secret it authenticates with (from the environment,
            /// never logged). The flow is off while any of the three is empty.
            public var authorizationURL = ""
            public var tokenURL = ""
            public var clientSecret = ""
            /// Scopes asked for besides the app's own (`openid` is always asked).
            public var scopes = defaultScopes
            public static let defaultScopes = ["openid", "email", "profile"]

            public init(id: String, issuer: String, clientID: String, jwksURL: String = "", jwksFile: String = "", trusted: Bool) {
                self.id = id
                self.issuer = issuer
                self.clientID = clientID
                self.jwksURL = jwksURL
                self.jwksFile = jwksFile
                self.trusted = trusted
            }

            /// Whether the hosted sign-in handler can run this provider's browser flow.
            public var hasWebFlow: Bool { !authorizationURL.isEmpty && !tokenURL.isEmpty && !clientSecret.isEmpty }
        }

        /// Twitter (OAuth 1.0a): the access token and secret are checked by calling `verify_credentials`.
        public struct Twitter: Sendable, Hashable {
            public var consumerKey: String
            /// From `HERALD_PROVIDERS_TWITTER_CONSUMER_SECRET`; never logged.
            public var consumerSecret: String
            public var apiBaseURL: String
            public var trusted: Bool

            public init(consumerKey: String, consumerSecret: String, apiBaseURL: String = "https://api.twitter.com", trusted: Bool = false) {
                self.consumerKey = consumerKey
                self.consumerSecret = consumerSecret
                self.apiBaseURL = apiBaseURL
                self.trusted = trusted
            }
        }

        public var oidc: [OIDC] = []
        public var twitter: Twitter?
        /// The hosted sign-in handler's public URL (`https://auth.example.com/__/auth/handler`), which providers
        /// return the browser to and which must be registered with them; empty: the URL the app opened.
        public var handlerURL = ""
        /// The apps the hosted sign-in handler may return to: iOS URL schemes (the reversed client id, or
        /// `app-<app id>`) and Android package names. Emulator mode allows any.
        public var appCallbacks: [String] = []
        public init() {}

        /// The OIDC provider with this id, if configured.
        public func oidc(_ id: String) -> OIDC? { oidc.first { $0.id == id } }
    }

    public struct Ledger: Sendable {
        /// Link events, suppressed requests and abuse counters older than this are deleted; 0 keeps them forever.
        public var eventRetention: TimeInterval = 90 * 86_400
        /// Finished messages first queued and last changed longer ago than this are deleted with their codes,
        /// attempts, link events and feedback (a campaign's once none of its rows is left to send); 0 keeps them
        /// forever.
        public var messageRetention: TimeInterval = 0
        /// The shortest `messageRetention`: a margin, not a cited figure. Unsubscribe links and late bounces of
        /// pruned campaign mail still work through tombstones; the other records of a message (its attempts,
        /// feedback and clicks) are what late complaints and an operator's questions about recent mail need, and
        /// CAN-SPAM asks that an unsubscribe link keep working for 30 days after the mail is sent.
        public static let minimumMessageRetention: TimeInterval = 30 * 86_400
        /// A directory where the audit rows of messages are appended, gzip-compressed JSON lines, before message
        /// retention deletes them (`herald audit --archive` reads it); empty: pruned messages are not archived.
        public var archive = ""
        public init() {}
    }

    /// Bulk campaigns.
    public struct Campaigns: Sendable {
        /// `List-Unsubscribe` mailto address on campaign mail; empty for none.
        public var unsubscribeMailto = ""
        /// Where Herald's `/unsubscribe` is reachable from the internet, e.g. `https://auth.example.com/unsubscribe`:
        /// campaign mail's one-click `List-Unsubscribe` URL (RFC 8058), which gets `?token=<signed per-recipient
        /// token>`; empty for none.
        public var unsubscribeURL = ""
        /// Where the console keeps the recipients files uploaded to create a campaign (mode 0600, random names) and
        /// their rejects files (`campaign-<id>.rejects.csv`); empty: `uploads` beside the SQLite ledger
        /// (`campaignUploadDirectory`).
        public var uploadDirectory = ""
        /// Largest recipients file the console takes in one upload; a larger one is answered `413` and not kept.
        public var maxUploadBytes = 256 * 1024 * 1024
        public init() {}
    }

    /// Bounces and complaints: VERP envelope senders, the listener an MTA delivers them to, and when soft
    /// bounces suppress an address.
    public struct Bounces: Sendable {
        /// The domain of the VERP envelope sender `<localPart>+<outbox id>-<mac>@<domain>`; empty sends with the
        /// From address as envelope sender and matches no bounce to its row.
        public var domain = ""
        public var localPart = "bounces"
        /// `herald bounces listen`: where it listens, and whether it speaks LMTP (RFC 2033) or SMTP.
        public var listenHost = "127.0.0.1"
        public var listenPort = 2424
        public var dialect = "lmtp"
        /// This many soft bounces of one address within `softWindow` suppress it.
        public var softLimit = 3
        public var softWindow: TimeInterval = 7 * 86_400
        public init() {}
    }

    /// DKIM signatures on outgoing mail; off while `domain` is empty.
    public struct DKIM: Sendable {
        /// `d=`: the From address's domain or a parent of it (DMARC alignment).
        public var domain = ""
        /// `s=` of the RSA key: its record is `<selector>._domainkey.<domain>`.
        public var selector = "herald"
        /// PEM RSA private key (2048 bits or more) for `rsa-sha256`; required when `domain` is set.
        public var rsaKeyFile = ""
        /// PEM (PKCS#8) Ed25519 private key for a second signature, `ed25519-sha256` (RFC 8463); empty for none.
        public var ed25519KeyFile = ""
        /// `s=` of the Ed25519 key, which needs a record of its own.
        public var ed25519Selector = "herald-ed25519"
        public init() {}
    }

    /// ID tokens and refresh tokens.
    public struct Tokens: Sendable {
        /// The RSA keys that sign ID tokens (created on first use, mode 0600); empty means
        /// `signing-keys.json` beside the database.
        public var keyFile = ""
        /// The key that signs bounce addresses and unsubscribe links (created on first use, mode 0600); empty
        /// means `mail-key` beside the database. Every worker and server of one ledger needs the same file.
        public var mailKeyFile = ""
        public init() {}
    }

    /// Who keeps the user accounts.
    public struct Accounts: Sendable {
        /// `herald`: Herald stores accounts and applies each redemption (Firebase semantics).
        /// `app`: the operator's app keeps its users; Herald dispatches, verifies, consumes and records.
        public enum Owner: String, Sendable, CaseIterable {
            case herald, app
        }

        public var owner = Owner.herald
        public init() {}
    }

    /// The dispatch loop.
    public struct Worker: Sendable {
        public var batchSize = 50
        /// How many of a connection's sends may await recording at once: the most a crash can send twice per
        /// connection. More lets outcomes share a commit (one WAL append for many), fewer bounds duplicates tighter.
        public var unrecordedPerConnection = 64
        public var maxAttempts = 8
        /// How many times a message that was possibly delivered (no reply to its final dot) is sent again; 0 never
        /// resends it. Each resend may be a duplicate (RFC 1047), so few: one gives a copy lost on the way a second
        /// chance and bounds the copies at two.
        public var maxUncertainRetries = 1
        public var backoffBase: TimeInterval = 30
        public var backoffCap: TimeInterval = 3600
        /// How long a claimed row stays reserved, the backstop when a worker's death goes unnoticed; at least two
        /// SMTP exchanges (`2 × (smtp.connectTimeout + smtp.timeout + smtp.dataTimeout)`), or a slow send outlives it.
        public var lease: TimeInterval = 1800
        public var pollInterval: TimeInterval = 1
        /// Queued mail older than this is expired instead of sent; actions absent here never expire.
        public var maxQueueWait: [ActionKind: TimeInterval] = [.signIn: 900, .resetPassword: 900]
        /// Mail still undelivered this long after it first became due is expired, whatever the reason (Postfix: 5 days).
        public var maxQueueLifetime: TimeInterval = 5 * 86400
        /// After a connection-level failure the connection pauses this long, doubling per failure up to the cap.
        public var connectionBackoffBase: TimeInterval = 1
        public var connectionBackoffCap: TimeInterval = 60
        /// A worker whose heartbeat is older than this is dead and its rows return to the queue (on the
        /// worker's own host, a vanished process is noticed at once).
        public var heartbeatTimeout: TimeInterval = 30
        /// Global cap on messages per second across all mail and connections; 0 means none.
        public var maxRate: Double = 0
        /// `herald worker` serves `GET /metrics` (Prometheus text) on this address; port 0 means no metrics listener.
        public var metricsHost = "127.0.0.1"
        public var metricsPort = 0
        public init() {}
    }
}

extension HeraldConfiguration {
    /// `tokens.mailKeyFile`, or `mail-key` in the database's directory.
    public var mailKeyPath: String {
        guard tokens.mailKeyFile.isEmpty else { return tokens.mailKeyFile }
        let directory = (database.path as NSString).deletingLastPathComponent
        return directory.isEmpty ? "mail-key" : directory + "/mail-key"
    }

    /// `campaigns.uploadDirectory`, or `uploads` in the database's directory.
    public var campaignUploadDirectory: String {
        guard campaigns.uploadDirectory.isEmpty else { return campaigns.uploadDirectory }
        let directory = (database.path as NSString).deletingLastPathComponent
        return directory.isEmpty ? "uploads" : directory + "/uploads"
    }

    /// `tokens.keyFile`, or `signing-keys.json` in the database's directory.
    public var signingKeyPath: String {
        guard tokens.keyFile.isEmpty else { return tokens.keyFile }
        let directory = (database.path as NSString).deletingLastPathComponent
        return directory.isEmpty ? "signing-keys.json" : directory + "/signing-keys.json"
    }
}
