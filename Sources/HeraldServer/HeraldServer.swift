import HeraldActions
import HeraldCore
import Hummingbird
import Logging

/// `herald serve`'s HTTP application: the Identity Toolkit surface, the action pages, the admin pages,
/// the emulator's code listing and `/health`.
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
        let router = Router(context: HeraldRequestContext.self)
        let toolkit = IdentityToolkitController(actions: actions).routes
        for family in IdentityToolkitController.pathFamilies {
            router.addRoutes(toolkit, atPath: family)
        }
        router.addRoutes(ActionPagesController(actions: actions, pages: pages).routes)
        router.addRoutes(AdminController(actions: actions).routes, atPath: "admin")
        router.addRoutes(EmulatorController(actions: actions).routes, atPath: "emulator/v1")
        router.get("health") { _, _ in
            let reply = HealthReply(health)
            return try FirebaseJSONEncoder.response(reply, status: reply.httpStatus)
        }
        let server = configuration.server
        return Application(
            router: router,
            configuration: .init(address: .hostname(server.host, port: server.port), serverName: "Herald"),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? server.port) },
            logger: logger)
    }
}
