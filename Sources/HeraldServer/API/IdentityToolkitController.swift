import HeraldActions
import HeraldCore
import Hummingbird

/// The Identity Toolkit methods for email actions: one route collection, mounted under every path
/// family Firebase clients use, v1 and the legacy v3 `relyingparty` names the iOS and Android SDKs call.
///
/// ```swift
/// let toolkit = IdentityToolkitController(
///     configuration: configuration, sending: actions.sending, redemption: actions.redemption, accounts: actions.accounts,
///     sessions: actions.sessions, providers: actions.providers, adminToken: actions.adminToken)
/// for family in IdentityToolkitController.pathFamilies { router.addRoutes(toolkit.routes, atPath: family) }
/// for family in IdentityToolkitController.legacyFamilies { router.addRoutes(toolkit.legacyRoutes, atPath: family) }
/// ```
struct IdentityToolkitController: Sendable {
    let configuration: HeraldConfiguration
    let sending: SendingService
    let redemption: RedemptionService
    let accounts: AccountsService
    let sessions: SessionsService
    let providers: ProvidersService
    let adminToken: AdminTokenCheck

    /// `/v1/…`, `/identitytoolkit.googleapis.com/v1/…` and their `projects/{project}/` forms.
    static let pathFamilies: [RouterPath] = [
        "v1", "identitytoolkit.googleapis.com/v1",
        "v1/projects/:project", "identitytoolkit.googleapis.com/v1/projects/:project",
    ]

    /// Where the iOS and Android SDKs (and old web clients) send the v3 names.
    static let legacyFamilies: [RouterPath] = [
        "www.googleapis.com/identitytoolkit/v3/relyingparty", "identitytoolkit/v3/relyingparty",
    ]

    typealias Handler = @Sendable (Request, HeraldRequestContext) async throws -> Response

    /// Every method by its v1 name, and its v3 name where it has one: the same handler either way.
    var methods: [(v1: String, v3: String?, handler: Handler)] {
        [
            ("accounts:sendOobCode", "getOobConfirmationCode", respond(sendOobCode)),
            ("accounts:resetPassword", "resetPassword", respond(resetPassword)),
            ("accounts:signInWithEmailLink", "emailLinkSignin", respond(signInWithEmailLink)),
            ("accounts:update", "setAccountInfo", respond(update)),
            ("accounts:createAuthUri", "createAuthUri", respond(createAuthUri)),
            ("accounts:lookup", "getAccountInfo", respond(lookup)),
            ("accounts:signUp", "signupNewUser", signUpOrCreate),
            ("accounts", nil, respond(create)),
            ("accounts:signInWithPassword", "verifyPassword", respond(signInWithPassword)),
            ("accounts:signInWithIdp", "verifyAssertion", respond(signInWithIdp)),
            ("accounts:delete", "deleteAccount", respond(delete)),
            ("accounts:batchCreate", "uploadAccount", respond(batchCreate)),
            ("accounts:batchDelete", nil, respond(batchDelete)),
            ("accounts:query", nil, respond(query)),
            ("codes:inspect", nil, respond(inspectForApp)),
            ("codes:redeem", nil, respond(redeemForApp)),
            ("codes:redeemTyped", nil, redeemTypedCode),
        ]
    }

    var routes: RouteCollection<HeraldRequestContext> {
        collection { routes in
            for method in methods { routes.post(RouterPath(method.v1), use: method.handler) }
            routes.get("accounts:batchGet", use: respond(batchGet))
        }
    }

    var legacyRoutes: RouteCollection<HeraldRequestContext> {
        collection { routes in
            for method in methods { if let v3 = method.v3 { routes.post(RouterPath(v3), use: method.handler) } }
            routes.post("downloadAccount", use: respond(downloadAccount))
        }
    }

    /// The middleware every family shares, then the methods `add` registers.
    private func collection(_ add: (RouteCollection<HeraldRequestContext>) -> Void) -> RouteCollection<HeraldRequestContext> {
        let routes = RouteCollection(context: HeraldRequestContext.self)
            .add(middleware: FirebaseErrorMiddleware())
            .add(middleware: ClientAddressMiddleware(trustedProxies: configuration.limits.trustedProxies))
            .add(middleware: ProjectMiddleware(projectID: configuration.project.id))
        // Unknown methods are not found whoever asks: registered before authentication. `UnroutedMiddleware` answers
        // it, so a POST to a method served only by GET (`accounts:batchGet`) is a 405 naming GET.
        routes.post("**") { _, _ -> Response in throw HTTPError(.notFound) }
        routes
            .add(middleware: BodyLimitMiddleware(maxBytes: configuration.server.maxBodyBytes))
            .add(
                middleware: CallerMiddleware(
                    apiKey: configuration.project.apiKey, admin: AdminCredential(configuration.server, check: adminToken)))
        add(routes)
        return routes
    }

    /// A typed handler as a plain one, so v1 and v3 names share it.
    private func respond<Reply: ResponseGenerator>(
        _ handler: @escaping @Sendable (Request, HeraldRequestContext) async throws -> Reply
    ) -> Handler {
        { request, context in try await handler(request, context).response(from: request, context: context) }
    }
}
