import Foundation
import HeraldCore
import HeraldStore
import Testing

@testable import HeraldActions

@Suite struct CredentialTests {
    static let visitor = Visitor(ip: "127.0.0.1", userAgent: "tests")

    @Test func idTokensAreRS256WithAKidAndRejectTampering() async throws {
        let rulebook = try Rulebook()
        let account = try rulebook.actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .admin)
        let token = try await rulebook.actions.sessions.idTokens().issue(for: account, provider: "password", authTime: Date())
        let header = try JSONSerialization.jsonObject(with: Self.segment(token, 0)) as? [String: Any]
        #expect(header?["alg"] as? String == "RS256")
        #expect(try header?["kid"] as? String == rulebook.actions.sessions.idTokens().jwks.keys.last?.kid)
        let claims = try JSONSerialization.jsonObject(with: Self.segment(token, 1)) as? [String: Any]
        #expect(claims?["aud"] as? String == "herald-demo")
        #expect(claims?["iss"] as? String == "https://securetoken.google.com/herald-demo")
        #expect((claims?["firebase"] as? [String: Any])?["sign_in_provider"] as? String == "password")
        #expect(try await rulebook.actions.sessions.idTokens().verify(token).uid == account.uid)

        var parts = token.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(Array(#"{"sub":"admin","aud":"herald-demo","exp":9999999999}"#.utf8))
        let forged = await #expect(throws: HeraldError.self) { try await rulebook.actions.sessions.idTokens().verify(parts.joined(separator: ".")) }
        #expect(forged?.code == .invalidIDToken)
        // Another installation's keys do not verify this one's tokens.
        let other = try Rulebook()
        let foreign = await #expect(throws: HeraldError.self) { try await other.actions.sessions.idTokens().verify(token) }
        #expect(foreign?.code == .invalidIDToken)
    }

    @Test func expiredIDTokenIsTokenExpired() async throws {
        let rulebook = try Rulebook()
        let account = try rulebook.actions.accounts.createAccount(SignUpRequest(email: "ada@example.com"), as: .admin)
        let old = Date(timeIntervalSinceNow: -7200)
        let token = try await rulebook.actions.sessions.idTokens().issue(for: account, provider: "password", authTime: old, now: old)
        let error = await #expect(throws: HeraldError.self) { try await rulebook.actions.sessions.idTokens().verify(token) }
        #expect(error?.code == .tokenExpired)
    }

    @Test func rotationKeepsOldKeysVerifyingUntilTheirTokensExpire() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-keys-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("keys.json").path
        let start = Date()
        var file = try SigningKeyFile.openOrCreate(path: path, now: start)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try SigningKeyFile.openOrCreate(path: path).keys == file.keys)  // read back, not regenerated
        let first = file.keys[0].kid
        let second = try file.rotate(now: start.addingTimeInterval(60))
        #expect(file.liveKeys(at: start.addingTimeInterval(120)).map(\.kid) == [first, second.kid])
        #expect(file.liveKeys(at: start.addingTimeInterval(60 + SigningKeyFile.retiredKeyLifetime + 1)).map(\.kid) == [second.kid])
        let third = try file.rotate(now: start.addingTimeInterval(60 + SigningKeyFile.retiredKeyLifetime + 10))
        #expect(try SigningKeyFile.openOrCreate(path: path).keys.map(\.kid) == [second.kid, third.kid])
    }

    @Test func refreshTokensEndWithTheirAccountsSessions() async throws {
        let rulebook = try Rulebook()
        let actions = rulebook.actions
        let signedUp = try await actions.accounts.signUp(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .app)
        let refresh = try #require(signedUp.session?.refreshToken)
        let refreshed = try await actions.sessions.refresh(grantType: "refresh_token", refreshToken: refresh)
        #expect(refreshed.refreshToken == refresh && refreshed.localId == signedUp.account.uid)
        #expect(try await actions.sessions.account(forIDToken: refreshed.idToken).uid == signedUp.account.uid)
        #expect(await Self.code { _ = try await actions.sessions.refresh(grantType: nil, refreshToken: refresh) } == "MISSING_GRANT_TYPE")
        #expect(await Self.code { _ = try await actions.sessions.refresh(grantType: "code", refreshToken: refresh) } == "INVALID_GRANT_TYPE")
        #expect(await Self.code { _ = try await actions.sessions.refresh(grantType: "refresh_token", refreshToken: "") } == "MISSING_REFRESH_TOKEN")
        #expect(
            await Self.code { _ = try await actions.sessions.refresh(grantType: "refresh_token", refreshToken: "nope") } == "INVALID_REFRESH_TOKEN")

        // A new password ends every session; the answer carries a new one.
        var edit = ProfileEdit()
        edit.password = "secret-2"
        let update = try await actions.accounts.updateOwnAccount(idToken: refreshed.idToken, edit)
        let current = try #require(update.session)
        #expect(await Self.code { _ = try await actions.sessions.refresh(grantType: "refresh_token", refreshToken: refresh) } == "TOKEN_EXPIRED")
        #expect(await Self.code { _ = try await actions.sessions.account(forIDToken: refreshed.idToken) } == "TOKEN_EXPIRED")

        var disable = AccountEdit()
        disable.disabled = true
        _ = try actions.accounts.editAccount(uid: signedUp.account.uid, disable)
        #expect(
            await Self.code { _ = try await actions.sessions.refresh(grantType: "refresh_token", refreshToken: current.refreshToken) }
                == "USER_DISABLED")
        try actions.accounts.deleteAccount(uid: signedUp.account.uid)
        #expect(
            await Self.code { _ = try await actions.sessions.refresh(grantType: "refresh_token", refreshToken: current.refreshToken) }
                == "USER_NOT_FOUND")
        // The uid used again does not revive the deleted account's tokens.
        _ = try actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", localId: signedUp.account.uid), as: .admin)
        #expect(
            await Self.code { _ = try await actions.sessions.refresh(grantType: "refresh_token", refreshToken: current.refreshToken) }
                == "USER_NOT_FOUND")
    }

    @Test func anEmailChangeSendsTheOldAddressALinkThatChangesItBack() async throws {
        let rulebook = try Rulebook { $0.server.enumerationProtection = false }
        let actions = rulebook.actions
        let signedUp = try await actions.accounts.signUp(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .app)
        var edit = ProfileEdit()
        edit.email = "Ada.New@example.com"
        let update = try await actions.accounts.updateOwnAccount(idToken: signedUp.session?.idToken, edit)
        #expect(update.account.email == "ada.new@example.com" && !update.account.emailVerified)
        #expect(update.account.initialEmail == "ada@example.com")
        #expect(update.session != nil)
        let queued = try rulebook.store.messages()
        #expect(queued.map(\.kind) == [.recoverEmail] && queued.first?.recipient.value == "ada@example.com")
        #expect(try rulebook.store.stateCounts()[.queued] == 1)

        let protected = try Rulebook()
        let other = try await protected.actions.accounts.signUp(SignUpRequest(email: "bob@example.com", password: "secret-1"), as: .app)
        #expect(
            await Self.code { _ = try await protected.actions.accounts.updateOwnAccount(idToken: other.session?.idToken, edit) }
                == "OPERATION_NOT_ALLOWED")
    }

    @Test func changingTheEmailOrPasswordNeedsARecentSignIn() async throws {
        let rulebook = try Rulebook { $0.server.enumerationProtection = false }
        let account = try rulebook.actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .admin)
        // A refreshed token of a session that began an hour ago.
        let stale = try await rulebook.actions.sessions.idTokens().issue(
            for: account, provider: "password", authTime: Date(timeIntervalSinceNow: -3600))
        var edit = ProfileEdit()
        edit.password = "secret-2"
        #expect(
            await Self.code { _ = try await rulebook.actions.accounts.updateOwnAccount(idToken: stale, edit) } == "CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
        edit = ProfileEdit()
        edit.email = "mallory@example.com"
        #expect(
            await Self.code { _ = try await rulebook.actions.accounts.updateOwnAccount(idToken: stale, edit) } == "CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
        #expect(await Self.code { try await rulebook.actions.accounts.deleteOwnAccount(idToken: stale) } == "CREDENTIAL_TOO_OLD_LOGIN_AGAIN")
        edit = ProfileEdit()
        edit.displayName = "Ada"
        #expect(try await rulebook.actions.accounts.updateOwnAccount(idToken: stale, edit).account.displayName == "Ada")
    }

    @Test func aCodeSpeaksOnlyForTheAccountThatHadTheAddressWhenItWasMinted() async throws {
        let rulebook = try Rulebook()
        let actions = rulebook.actions
        let first = try actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .admin)
        var codes: [ActionKind: String] = [:]
        for kind in [ActionKind.resetPassword, .verifyEmail] {
            guard
                case .link(let code, _) = try await actions.sending.send(
                    SendRequest(kind: kind, email: "ada@example.com", returnLink: true), as: .admin
                )
                .delivery
            else { throw HeraldError(.invalidArgument, "expected a link") }
            codes[kind] = code
        }
        try actions.accounts.deleteAccount(uid: first.uid)
        try await Task.sleep(for: .milliseconds(5))
        _ = try actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-9"), as: .admin)
        #expect(
            await Self.code {
                _ = try actions.redemption.resetPassword(code: codes[.resetPassword], newPassword: "taken-over", visitor: Self.visitor)
            }
                == "INVALID_OOB_CODE")
        #expect(
            await Self.code { _ = try actions.redemption.applyVerification(code: codes[.verifyEmail], visitor: Self.visitor) } == "INVALID_OOB_CODE")
    }

    @Test func anAdministratorsEmailChangeEndsTheAccountsSessions() async throws {
        let rulebook = try Rulebook()
        let signedUp = try await rulebook.actions.accounts.signUp(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .app)
        var edit = AccountEdit()
        edit.email = "ada.lovelace@example.com"
        let edited = try rulebook.actions.accounts.editAccount(uid: signedUp.account.uid, edit)
        #expect(edited.email == "ada.lovelace@example.com" && !edited.emailVerified && edited.initialEmail == "ada@example.com")
        let refresh = signedUp.session?.refreshToken
        #expect(
            await Self.code { _ = try await rulebook.actions.sessions.refresh(grantType: "refresh_token", refreshToken: refresh) } == "TOKEN_EXPIRED")
        // The same address again changes nothing.
        let again = try rulebook.actions.accounts.editAccount(uid: signedUp.account.uid, edit)
        #expect(again.validSince == edited.validSince)
    }

    @Test func passwordHashesAreSaltedAndVerify() throws {
        let first = try PasswordHasher.hash("correct horse")
        let second = try PasswordHasher.hash("correct horse")
        #expect(first != second)
        #expect(!first.contains("correct horse"))
        #expect(PasswordHasher.verify("correct horse", against: first))
        #expect(!PasswordHasher.verify("wrong horse", against: first))
        #expect(!PasswordHasher.verify("correct horse", against: "garbage"))
        let error = #expect(throws: HeraldError.self) { try PasswordHasher.checkStrength("12345") }
        #expect(error?.description == "WEAK_PASSWORD : Password should be at least 6 characters")
    }

    static func segment(_ token: String, _ index: Int) -> Data {
        var text = String(token.split(separator: ".")[index]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text) ?? Data()
    }

    static func code(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as HeraldError {
            return error.code.rawValue
        } catch {
            return "\(error)"
        }
    }
}
