import Foundation
import HeraldCore
import Testing

@testable import HeraldServer

@Suite struct ConsoleSessionsTests {
    static func sessions(token: String = "an-admin-token-of-some-length-0123456789") -> ConsoleSessions {
        var server = HeraldConfiguration.Server()
        server.adminToken = token
        return ConsoleSessions(server)
    }

    @Test func anIssuedSessionVerifiesUntilItExpires() throws {
        let sessions = Self.sessions()
        let now = Date()
        let cookie = try #require(sessions.issue(now: now))
        let session = try #require(sessions.verify(cookie, now: now))
        #expect(abs(session.expires.timeIntervalSince(now) - ConsoleSessions.lifetime) < 1)
        #expect(sessions.verify(cookie, now: now.addingTimeInterval(ConsoleSessions.lifetime + 1)) == nil)
    }

    @Test func aTamperedOrForeignCookieIsNoSession() throws {
        let sessions = Self.sessions()
        let cookie = try #require(sessions.issue())
        var parts = cookie.split(separator: ".").map(String.init)
        parts[0] = String(Int64(parts[0])! + 3_600_000)  // a longer life
        #expect(sessions.verify(parts.joined(separator: ".")) == nil)
        #expect(sessions.verify(cookie + "x") == nil)
        #expect(sessions.verify("") == nil && sessions.verify(nil) == nil && sessions.verify("a.b") == nil)
        #expect(Self.sessions(token: "another-admin-token-0123456789abcdef").verify(cookie) == nil, "changing the token ends every session")
    }

    @Test func eachSessionHasItsOwnCSRFToken() throws {
        let sessions = Self.sessions()
        let first = try #require(sessions.verify(sessions.issue()))
        let second = try #require(sessions.verify(sessions.issue()))
        #expect(first.csrf != second.csrf && !first.csrf.isEmpty)
        #expect(sessions.signInToken(for: "abc") != sessions.signInToken(for: "abd"))
    }

    @Test func withoutAnAdminTokenNobodySignsIn() {
        let sessions = Self.sessions(token: "")
        #expect(!sessions.isEnabled && sessions.issue() == nil && sessions.signInToken(for: "abc") == nil)
        #expect(Self.sessions().verify(Self.sessions().issue()) != nil)
    }
}
