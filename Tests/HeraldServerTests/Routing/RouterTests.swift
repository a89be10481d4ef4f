import Foundation
import HeraldCore
import HummingbirdTesting
import Testing

/// Routing, path families and projects, through the real router.
@Suite struct RouterTests {
    static let families = [
        "/v1", "/identitytoolkit.googleapis.com/v1", "/v1/projects/\(TestServer.projectID)",
        "/identitytoolkit.googleapis.com/v1/projects/\(TestServer.projectID)",
    ]
    static let methods = [
        "accounts:sendOobCode", "accounts:resetPassword", "accounts:signInWithEmailLink", "accounts:update",
        "accounts:createAuthUri", "accounts:lookup", "accounts:signUp", "accounts", "accounts:signInWithPassword",
        "accounts:delete", "codes:inspect", "codes:redeem", "accounts:signInWithIdp",
    ]
    static let authURI = #"{"identifier":"ada@example.com","continueUri":"http://localhost/done"}"#

    @Test func createAuthUriAnswersUnderEveryPathFamily() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            for family in Self.families {
                let response = try await client.post("\(family)/accounts:createAuthUri", Self.authURI)
                #expect(response.status == .ok, "\(family)")
                let reply = try response.decode(AuthURIAnswer.self)
                #expect(reply.kind == "identitytoolkit#CreateAuthUriResponse", "\(family)")
                #expect(!reply.sessionId.isEmpty && reply.registered == nil, "\(family)")
            }
        }
    }

    @Test func everyMethodIsRoutedUnderEveryPathFamily() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            for family in Self.families {
                for method in Self.methods {
                    let response = try await client.post("\(family)/\(method)")
                    // An empty body gets each method's own answer, never "no such method": a refusal, except for
                    // signUp, where it makes an anonymous account (a guest), as Firebase's does.
                    if method == "accounts:signUp" {
                        #expect(response.status == .ok, "\(family)/\(method)")
                        continue
                    }
                    #expect(response.status == .badRequest, "\(family)/\(method)")
                    #expect(response.error?.errors.first?.reason == "invalid", "\(family)/\(method)")
                }
            }
        }
    }

    @Test func anotherProjectIsProjectNotFoundInFirebasesEnvelope() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let envelope =
                #"{"error":{"code":404,"errors":[{"domain":"global","message":"PROJECT_NOT_FOUND","reason":"notFound"}],"#
                + #""message":"PROJECT_NOT_FOUND","status":"NOT_FOUND"}}"#
            for family in ["/v1/projects/other", "/identitytoolkit.googleapis.com/v1/projects/other"] {
                for credential in [Credential.app, .none] {
                    let response = try await client.post("\(family)/accounts:createAuthUri", as: credential, Self.authURI)
                    #expect(response.status == .notFound)
                    #expect(response.text == envelope)
                }
            }
        }
    }

    @Test func anUnknownMethodIsNotFoundWhoeverAsks() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            for credential in [Credential.app, .admin, .none, .key("wrong")] {
                for family in Self.families {
                    let response = try await client.post("\(family)/accounts:launchRockets", as: credential)
                    #expect(response.status == .notFound, "\(family)")
                    #expect(response.error?.message == "NOT_FOUND" && response.error?.status == "NOT_FOUND", "\(family)")
                }
            }
        }
    }

    @Test func healthIsOkWhileTheProcessCanDoItsJob() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let response = try await client.execute(uri: "/health", method: .get)
            #expect(response.status == .ok)
            #expect(response.text == #"{"status":"ok"}"#)
        }
    }

    @Test func healthIs503WithTheFirstFailureAfterTheWorkerFails() async throws {
        let server = try TestServer()
        let app = try server.application()
        server.health.fail("worker: boom")
        server.health.fail("worker: later")
        try await app.test(.router) { client in
            let response = try await client.execute(uri: "/health", method: .get)
            #expect(response.status == .serviceUnavailable)
            #expect(response.text == #"{"error":"worker: boom","status":"failing"}"#)
        }
    }
}

/// `accounts:createAuthUri`'s answer.
struct AuthURIAnswer: Decodable {
    let kind: String
    let sessionId: String
    let registered: Bool?
}

/// The strict request decoder, through the router.
@Suite struct StrictBodyRoutingTests {
    @Test func anUnknownFieldIsRefusedByItsName() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let response = try await client.call("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","x":1}"#)
            #expect(response.status == .badRequest)
            let message = #"INVALID_ARGUMENT : Invalid JSON payload received. Unknown name "x": Cannot find field."#
            #expect(response.error?.message == message && response.error?.errors.first?.message == message)
            #expect(response.error?.code == 400 && response.error?.status == nil)
        }
    }

    @Test func aWrongTypeNamesTheFieldAndTheExpectedType() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let response = try await client.call("accounts:sendOobCode", #"{"requestType":"PASSWORD_RESET","email":42}"#)
            #expect(response.status == .badRequest)
            #expect(response.error?.message == "INVALID_ARGUMENT : Invalid value at 'email' (TYPE_STRING)")
        }
    }

    @Test func aBodyOverTheLimitIsAnInvalidArgument() async throws {
        let app = try TestServer { $0.server.maxBodyBytes = 64 }.application()
        try await app.test(.router) { client in
            let padding = String(repeating: "a", count: 100)
            let response = try await client.call("accounts:createAuthUri", #"{"identifier":"\#(padding)@example.com"}"#)
            #expect(response.status == .badRequest)
            #expect(response.error?.message == "INVALID_ARGUMENT : the request body is larger than 64 bytes")
        }
    }
}
