import Foundation
import HeraldActions
import HeraldCore
import HeraldMetrics
import Hummingbird
import Logging

/// `herald serve`'s HTTP application: the Identity Toolkit surface (v1 and legacy v3), token refresh, the
/// ID tokens' public keys, the action pages, the admin pages, the emulator's code listing, `/metrics`,
/// `/health` and `/openapi.json` (which describes them all), all behind CORS for authorized origins, and with
/// `server.accessLog` one log line per request.
///
/// ```swift
/// let app = try HeraldServer.application(actions: actions, health: health, logger: logger) { port in
///     print("READY http://127.0.0.1:\(port)")
/// }
/// try await app.runService()
/// ```
public enum HeraldServer {
    public static func application(
        actions: Actions, health: Health, logger: Logger, onListening: @escaping @Sendable (Int) -> Void
    ) throws -> some ApplicationProtocol {
        let configuration = actions.configuration
        let pages = try PageRenderer(
            directory: configuration.templatesDirectory, defaultLocale: configuration.links.defaultLocale,
            appName: configuration.project.appName)
        let tokens = try actions.sessions.idTokens()  // a bad key file stops the server before it listens
        let router = Router(context: HeraldRequestContext.self, options: .autoGenerateHeadEndpoints)
        // First, so it counts every routed request by method, route and status, with its duration (`herald_http_*`).
        router.add(middleware: RequestMetricsMiddleware())
        router.add(middleware: LedgerHealthMiddleware(health: health, logger: logger))
        let known = KnownRoutes()
        router.add(middleware: UnroutedMiddleware(routes: known))
        let toolkit = IdentityToolkitController(
            configuration: configuration, sending: actions.sending, redemption: actions.redemption, accounts: actions.accounts,
            sessions: actions.sessions, providers: actions.providers, adminToken: actions.adminToken)
        for family in IdentityToolkitController.pathFamilies {
            router.addRoutes(toolkit.routes, atPath: family)
        }
        for family in IdentityToolkitController.legacyFamilies {
            router.addRoutes(toolkit.legacyRoutes, atPath: family)
        }
        router.addRoutes(SecureTokenController(configuration: configuration, sessions: actions.sessions, adminToken: actions.adminToken).routes)
        router.addRoutes(PublicKeysController(tokens: tokens).routes)
        router.addRoutes(ActionPagesController(configuration: configuration, redemption: actions.redemption, pages: pages).routes)
        router.addRoutes(TypedCodePageController(configuration: configuration, redemption: actions.redemption, pages: pages).routes)
        router.addRoutes(UnsubscribeController(feedback: actions.feedback, pages: pages).routes)
        router.addRoutes(try SignInHandlerController(configuration: configuration, providers: actions.providers, pages: pages).routes)
        let console = ConsoleController(
            configuration: configuration, console: actions.console, campaigns: actions.campaigns, reports: actions.reports,
            sending: actions.sending, feedback: actions.feedback, webhooks: actions.webhooks,
            adminToken: actions.adminToken)
        router.addRoutes(console.routes, atPath: "admin")
        router.addRoutes(
            AdminController(
                configuration: configuration, sending: actions.sending, reports: actions.reports, adminToken: actions.adminToken
            ).routes, atPath: "admin")
        router.addRoutes(
            SuppressionsController(configuration: configuration, feedback: actions.feedback, adminToken: actions.adminToken).routes, atPath: "admin")
        router.addRoutes(EmulatorController(configuration: configuration, sending: actions.sending).routes, atPath: "emulator/v1")
        let metrics = MetricsController<HeraldRequestContext>(
            token: configuration.server.metricsToken, counts: { try await actions.reports.outboxCounts() }, logger: logger,
            gaugeInterval: configuration.server.metricsGaugeInterval)
        router.addRoutes(metrics.routes)
        router.addRoutes(OpenAPIController().routes)
        let ledger = actions.ledger
        router.get("health") { _, _ in
            // Requests found the ledger unavailable: a small write says whether it commits again.
            if health.shouldProbe(), (try? await offload({ try ledger.probeWrite(now: Date()) })) != nil,
                let seconds = health.ledgerAvailable()
            {
                let seconds = String(format: "%.1f", seconds)
                logger.info("ledger available again after \(seconds) s; requests are answered again", metadata: ["seconds": "\(seconds)"])
            }
            health.checkDescriptors(logger: logger)
            let reply = HealthReply(health)
            return try FirebaseJSONEncoder.response(reply, status: reply.httpStatus)
        }
        known.load(router.routes.map { (path: $0.path, method: $0.method) })
        let server = configuration.server
        let responder = AccessLogResponder(
            CORSResponder(router.buildResponder(), authorizedDomains: configuration.links.authorizedDomains), enabled: server.accessLog,
            trustedProxies: configuration.limits.trustedProxies)
        return Application(
            responder: responder,
            server: .guardedHTTP1(
                server, limits: configuration.limits, descriptors: FileDescriptorLimit.raiseToHard()),
            configuration: .init(address: .hostname(server.host, port: server.port), serverName: "Herald"),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? server.port) },
            logger: logger)
    }
}
