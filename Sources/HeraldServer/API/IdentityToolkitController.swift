import HeraldActions
import HeraldCore
import Hummingbird

/// The Identity Toolkit v1 methods for email actions: one route collection, mounted under every path
/// family Firebase clients use.
///
/// ```swift
/// let toolkit = IdentityToolkitController(actions: actions)
/// for family in IdentityToolkitController.pathFamilies { router.addRoutes(toolkit.routes, atPath: family) }
/// ```
struct IdentityToolkitController: Sendable {
    let actions: Actions

    /// `/v1/…`, `/identitytoolkit.googleapis.com/v1/…` and their `projects/{project}/` forms.
    static let pathFamilies: [RouterPath] = [
        "v1", "identitytoolkit.googleapis.com/v1",
        "v1/projects/:project", "identitytoolkit.googleapis.com/v1/projects/:project",
    ]

    var routes: RouteCollection<HeraldRequestContext> {
        let configuration = actions.configuration
        let admin = AdminCredential(configuration.server)
        let routes = RouteCollection(context: HeraldRequestContext.self)
            .add(middleware: FirebaseErrorMiddleware())
            .add(middleware: ProjectMiddleware(projectID: configuration.project.id))
        // Unknown methods are not found whoever asks: registered before authentication.
        routes.post("**") { _, _ -> Response in throw FirebaseError.notFound }
        routes
            .add(middleware: BodyLimitMiddleware(maxBytes: configuration.server.maxBodyBytes))
            .add(middleware: CallerMiddleware(apiKey: configuration.project.apiKey, admin: admin))
        routes
            .post("accounts:sendOobCode", use: sendOobCode)
            .post("accounts:resetPassword", use: resetPassword)
            .post("accounts:signInWithEmailLink", use: signInWithEmailLink)
            .post("accounts:update", use: update)
            .post("accounts:createAuthUri", use: createAuthUri)
            .post("accounts:lookup", use: lookup)
            .post("accounts:signUp", use: signUp)
            .post("accounts", use: create)
            .post("accounts:signInWithPassword", use: signInWithPassword)
            .post("accounts:delete", use: delete)
            .post("codes:inspect", use: inspectForApp)
            .post("codes:redeem", use: redeemForApp)
        return routes
    }
}
