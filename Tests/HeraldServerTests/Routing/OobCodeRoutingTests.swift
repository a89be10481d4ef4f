import Foundation
import HeraldActions
import HeraldCore
import HummingbirdTesting
import Testing

/// `accounts:sendOobCode` and the app-owned `codes:` methods, through the real router.
@Suite struct OobCodeRoutingTests {
    static let sentKind = "identitytoolkit#GetOobConfirmationCodeResponse"

    static func reset(_ email: String, returnOobLink: Bool = false, continueUrl: String? = nil) -> String {
        let continuation = continueUrl.map { #","continueUrl":"\#($0)""# } ?? ""
        return #"{"requestType":"PASSWORD_RESET","email":"\#(email)","returnOobLink":\#(returnOobLink)\#(continuation)}"#
    }

    @Test func anAdminWithReturnOobLinkGetsTheCodeAndTheLink() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let created = try await client.call("accounts", as: .admin, #"{"email":"ada@example.com","password":"secret-1"}"#)
            #expect(created.status == .ok)
            let send = Self.reset("ada@example.com", returnOobLink: true)
            let response = try await client.call("accounts:sendOobCode", as: .admin, send)
            #expect(response.status == .ok)
            let fields = try #require(response.fields)
            #expect(Set(fields.keys) == ["kind", "email", "oobCode", "oobLink"])
            #expect(fields["kind"] == Self.sentKind && fields["email"] == "ada@example.com")
            let code = try #require(fields["oobCode"])
            #expect(fields["oobLink"]?.contains("oobCode=\(code)") == true)
            #expect(fields["oobLink"]?.contains("mode=resetPassword") == true)
        }
    }

    @Test func anAdminIsToldAnAddressHasNoAccount() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            for returnOobLink in [false, true] {
                let body = Self.reset("nobody@example.org", returnOobLink: returnOobLink)
                let response = try await client.call("accounts:sendOobCode", as: .admin, body)
                #expect(response.status == .badRequest)
                #expect(response.error?.message == "EMAIL_NOT_FOUND")
            }
        }
    }

    @Test func anAppCannotTellWhetherAnAddressHasAnAccount() async throws {
        let server = try TestServer()
        _ = try server.actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .admin)
        let app = try server.application()
        try await app.test(.router) { client in
            for email in ["ada@example.com", "nobody@example.org"] {
                let response = try await client.call("accounts:sendOobCode", as: .app, Self.reset(email))
                #expect(response.status == .ok, "\(email)")
                #expect(response.text == #"{"email":"\#(email)","kind":"\#(Self.sentKind)"}"#)
            }
        }
    }

    @Test func anAppCannotAskForTheLink() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let send = Self.reset("ada@example.com", returnOobLink: true)
            let response = try await client.call("accounts:sendOobCode", as: .app, send)
            #expect(response.status == .badRequest)
            #expect(response.error?.message == "INSUFFICIENT_PERMISSION : returnOobLink is for admin calls")
        }
    }

    @Test func anAppOwningItsAccountsInspectsThenRedeemsACodeOnce() async throws {
        let app = try TestServer(owner: .app).application()
        try await app.test(.router) { client in
            let send = Self.reset("anyone@example.org", returnOobLink: true, continueUrl: "https://app.example.com/done")
            let sent = try #require(try await client.call("accounts:sendOobCode", as: .admin, send).fields)
            let code = try #require(sent["oobCode"])
            let body = #"{"oobCode":"\#(code)"}"#

            let inspected = try await client.call("codes:inspect", as: .admin, body)
            #expect(inspected.status == .ok)
            let info = try #require(inspected.fields)
            #expect(Set(info.keys) == ["requestType", "email", "continueUrl", "expiresAt"])
            #expect(info["requestType"] == "PASSWORD_RESET" && info["email"] == "anyone@example.org")
            #expect(info["continueUrl"] == "https://app.example.com/done")
            let expiresAt = try #require(info["expiresAt"].flatMap { try? Date($0, strategy: .iso8601) })
            #expect(expiresAt > Date())

            let redeemed = try await client.call("codes:redeem", as: .admin, #"{"oobCode":"\#(code)","ip":"198.51.100.7"}"#)
            #expect(redeemed.status == .ok)
            let reply =
                #"{"continueUrl":"https://app.example.com/done","email":"anyone@example.org","#
                + #""requestType":"PASSWORD_RESET"}"#
            #expect(redeemed.text == reply)

            let again = try await client.call("codes:redeem", as: .admin, body)
            #expect(again.status == .badRequest)
            #expect(again.error?.message == "INVALID_OOB_CODE")
        }
    }

    @Test func anAppCallerCannotInspectOrRedeem() async throws {
        let app = try TestServer(owner: .app).application()
        try await app.test(.router) { client in
            for method in ["codes:inspect", "codes:redeem"] {
                let response = try await client.call(method, as: .app, #"{"oobCode":"whatever"}"#)
                #expect(response.status == .badRequest, "\(method)")
                #expect(response.error?.message == "INSUFFICIENT_PERMISSION", "\(method)")
            }
        }
    }

    @Test func codesRedeemIsNotAllowedWhenHeraldOwnsTheAccounts() async throws {
        let app = try TestServer().application()
        try await app.test(.router) { client in
            let response = try await client.call("codes:redeem", as: .admin, #"{"oobCode":"whatever"}"#)
            #expect(response.status == .badRequest)
            #expect(response.error?.message.hasPrefix("OPERATION_NOT_ALLOWED : Herald owns the accounts") == true)
        }
    }
}
