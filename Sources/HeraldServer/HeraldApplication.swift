import Foundation
import HeraldCore
import HeraldMail
import HeraldStore
import Hummingbird
import Logging

/// `herald serve`'s HTTP application: the Identity Toolkit surface, the action pages, the emulator endpoint.
///
/// ```swift
/// let app = try HeraldServer.application(configuration: configuration, store: store, composer: composer, logger: logger) { port in
///     print("READY http://127.0.0.1:\(port)")
/// }
/// try await app.runService()
/// ```
public enum HeraldServer {
    public static func application(
        configuration: HeraldConfiguration, store: HeraldStore, composer: MessageComposer, logger: Logger,
        onListening: @escaping @Sendable (Int) -> Void
    ) throws -> some ApplicationProtocol {
        let pages = try PageRenderer(
            directory: configuration.templatesDirectory, defaultLocale: configuration.links.defaultLocale,
            appName: configuration.project.appName)
        let context = ServerContext(configuration: configuration, store: store, composer: composer, pages: pages, logger: logger)
        let toolkit = IdentityToolkit(context: context)
        let actionPages = ActionPages(context: context)
        let router = Router(context: HeraldRequestContext.self)
        router.get("/__/auth/action") { request, requestContext in await actionPages.show(request, requestContext) }
        router.post("/__/auth/action") { request, requestContext in await actionPages.submit(request, requestContext) }
        router.get("/__/auth/links") { request, _ in actionPages.unwrap(request) }
        router.get("/emulator/v1/projects/:project/oobCodes") { _, requestContext -> Response in
            guard configuration.server.emulatorMode, requestContext.parameters.get("project") == configuration.project.id else {
                return FirebaseError.notFound.response
            }
            return JSONResponse.make(["oobCodes": context.emulatorCodes.withLock { $0 }])
        }
        router.get("/admin/campaigns/:id") { request, requestContext -> Response in
            guard context.isAdmin(request, requestContext) else { return FirebaseError.unauthenticated.response }
            guard let id = requestContext.parameters.get("id", as: Int64.self) else { return FirebaseError.notFound.response }
            do {
                let html = try await offload { ReportFormatter.html(try store.report(campaign: id)) }
                return Response(
                    status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
            } catch {
                return FirebaseError.notFound.response
            }
        }
        router.get("/admin/audit") { request, requestContext -> Response in
            guard context.isAdmin(request, requestContext) else { return FirebaseError.unauthenticated.response }
            let filter: AuditFilter
            do {
                filter = try AuditQueryParameters.filter(ActionPages.parameters(request.uri.query ?? ""))
            } catch let error as HeraldError {
                return FirebaseError(error).response
            }
            return AuditQueryParameters.stream(filter, store: store)
        }
        router.get("/health") { _, _ in JSONResponse.make(["status": "ok"]) }
        router.post("**") { request, requestContext in await toolkit.handle(request, requestContext) }
        return Application(
            router: router,
            configuration: .init(address: .hostname(configuration.server.host, port: configuration.server.port), serverName: "Herald"),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? configuration.server.port) },
            logger: logger)
    }
}
