import Hummingbird

/// Refuses a `projects/{project}/` path naming another project with Firebase's `PROJECT_NOT_FOUND`.
struct ProjectMiddleware<Context: RequestContext>: RouterMiddleware {
    let projectID: String

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let project = context.parameters.get("project"), project != projectID {
            throw FirebaseError.projectNotFound
        }
        return try await next(request, context)
    }
}
