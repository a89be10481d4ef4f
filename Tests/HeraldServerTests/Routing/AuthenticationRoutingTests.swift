import HeraldCore
import Hummingbird
import HummingbirdTesting
import Testing

/// `CallerMiddleware` and `AdminOnlyMiddleware`, through the real router.
@Suite struct AuthenticationRoutingTests {
    static let lookup = #"{"email":"nobody@example.org"}"#

    @Test func aMissingAPIKeyIs403PermissionDenied() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let response = try await client.call("accounts:createAuthUri", as: .none)
            let message = "The request is missing a valid API key."
            #expect(response.status == .forbidden)
            #expect(
                response.text
                    == #"{"error":{"code":403,"errors":[{"domain":"global","message":"\#(message)","reason":"forbidden"}],"#
                    + #""message":"\#(message)","status":"PERMISSION_DENIED"}}"#)
            #expect(try await client.call("accounts:createAuthUri", as: .key("")).status == .forbidden)
        }
    }

    @Test func aWrongAPIKeyIs400KeyInvalid() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let response = try await client.call("accounts:createAuthUri", as: .key("not-the-key"))
            #expect(response.status == .badRequest)
            #expect(response.error?.message == "API key not valid. Please pass a valid API key.")
            #expect(response.error?.status == "INVALID_ARGUMENT" && response.error?.errors.first?.reason == "keyInvalid")
        }
    }

    @Test func theAPIKeyMayComeInTheGoogleHeader() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let headers: HTTPFields = [.init("x-goog-api-key")!: TestServer.apiKey]
            let body = ByteBuffer(string: RouterTests.authURI)
            let uri = "/v1/accounts:createAuthUri"
            let response = try await client.execute(uri: uri, method: .post, headers: headers, body: body)
            #expect(response.status == .ok)
        }
    }

    @Test func aWrongBearerTokenIs401EvenWithTheAPIKey() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let uri = "/v1/accounts:lookup?key=\(TestServer.apiKey)"
            let headers: HTTPFields = [.authorization: "Bearer not-the-token"]
            let body = ByteBuffer(string: Self.lookup)
            let response = try await client.execute(uri: uri, method: .post, headers: headers, body: body)
            #expect(response.status == .unauthorized)
            #expect(response.error?.status == "UNAUTHENTICATED" && response.error?.errors.first?.location == "Authorization")
            #expect(try await client.call("accounts:lookup", as: .bearer("not-the-token")).status == .unauthorized)
        }
    }

    @Test func theAdminTokenNeedsNoAPIKeyAndUnlocksAdminMethods() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let admin = try await client.call("accounts:lookup", as: .admin, Self.lookup)
            #expect(admin.status == .ok)
            #expect(admin.text == #"{"kind":"identitytoolkit#GetAccountInfoResponse"}"#)
            // An app names its own account by ID token; without one it has nothing to look up.
            let app = try await client.call("accounts:lookup", as: .app, Self.lookup)
            #expect(app.error?.message == "MISSING_ID_TOKEN")
        }
    }

    @Test func anEmptyAdminTokenDisablesAdminCalls() async throws {
        let app = try TestServer { $0.server.adminToken = "" }.application()
        try await app.test(.router) { client in
            let empty = try await client.call("accounts:lookup", as: .bearer(""), Self.lookup)
            #expect(empty.status == .unauthorized)
            let formerToken = try await client.call("accounts:lookup", as: .bearer(TestServer.adminToken), Self.lookup)
            #expect(formerToken.status == .unauthorized)
        }
    }

    /// The router test client has no peer address, so it never counts as loopback.
    @Test func theEmulatorOwnerIsRefusedFromAPeerNotKnownToBeLoopback() async throws {
        let app = try TestServer { $0.server.allowEmulatorOwner = true }.application()
        try await app.test(.router) { client in
            let response = try await client.call("accounts:lookup", as: .bearer("owner"), Self.lookup)
            #expect(response.status == .unauthorized)
        }
    }

    @Test func theEmulatorOwnerIsAnAdminFromLoopbackOnlyWhenAllowed() async throws {
        let allowed = try TestServer { $0.server.allowEmulatorOwner = true }.application()
        try await allowed.test(.live) { client in
            let response = try await client.call("accounts:lookup", as: .bearer("Owner"), Self.lookup)
            #expect(response.status == .ok)
        }
        let refused = try TestServer().application()
        try await refused.test(.live) { client in
            let response = try await client.call("accounts:lookup", as: .bearer("owner"), Self.lookup)
            #expect(response.status == .unauthorized)
        }
    }

    @Test func adminPagesNeedTheAdminToken() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let anonymous = try await client.execute(uri: "/admin/audit", method: .get)
            #expect(anonymous.status == .unauthorized && anonymous.error?.status == "UNAUTHENTICATED")
            let withKey = try await client.execute(uri: "/admin/audit?key=\(TestServer.apiKey)", method: .get)
            #expect(withKey.status == .unauthorized)
            let headers: HTTPFields = [.authorization: "Bearer \(TestServer.adminToken)"]
            let admin = try await client.execute(uri: "/admin/audit", method: .get, headers: headers)
            #expect(admin.status == .ok)
        }
    }
}
