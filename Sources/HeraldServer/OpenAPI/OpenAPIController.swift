import Hummingbird

/// `GET /openapi.json`: the OpenAPI 3.1 description of every path Herald serves.
///
/// The document is `openapi.json` beside this file, embedded at build time and served as is;
/// `Tests/http/test_openapi.py` keeps it true by running schemathesis against a live server from it.
struct OpenAPIController: Sendable {
    static let document = ByteBuffer(bytes: PackageResources.openapi_json)

    var routes: RouteCollection<HeraldRequestContext> {
        RouteCollection(context: HeraldRequestContext.self)
            .get("openapi.json") { _, _ in
                let headers: HTTPFields = [.contentType: "application/json", .cacheControl: "public, max-age=300"]
                return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: Self.document))
            }
    }
}
