import Foundation
import HeraldActions
import HeraldCore
import HeraldStore
import Testing

@Suite struct ClientLimiterTests {
    let start = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func aBurstIsAdmittedThenTheRateHolds() {
        let limiter = ClientLimiter(rules: [.init(capacity: 5, perMinute: 60)])
        #expect((0..<5).allSatisfy { _ in limiter.take("198.51.100.1", now: start) })
        #expect(!limiter.take("198.51.100.1", now: start))
        #expect(limiter.take("198.51.100.2", now: start), "another client has its own bucket")
        #expect(limiter.take("198.51.100.1", now: start.addingTimeInterval(1)), "one token a second comes back")
        #expect(!limiter.take("198.51.100.1", now: start.addingTimeInterval(1)))
    }

    @Test func everyRuleMustAdmitAndARefusalTakesNothing() {
        let limiter = ClientLimiter(rules: [.init(capacity: 10, perMinute: 600), .init(capacity: 3, perHour: 3)])
        #expect((0..<3).allSatisfy { _ in limiter.take("198.51.100.1", now: start) })
        #expect(!limiter.take("198.51.100.1", now: start.addingTimeInterval(60)), "the hourly bucket is empty")
        #expect(limiter.allows("198.51.100.1", now: start.addingTimeInterval(1200)))
    }

    @Test func anIPv6ClientIsCountedByItsSlash64() {
        let limiter = ClientLimiter(rules: [.init(capacity: 2, perMinute: 1)])
        #expect(limiter.take("2001:db8::1", now: start))
        #expect(limiter.take("2001:db8::2", now: start))
        #expect(!limiter.take("2001:db8::ffff:3", now: start))
    }

    @Test func zeroTurnsALimitOff() {
        let limiter = ClientLimiter(rules: [.init(capacity: 0, perMinute: 0)])
        #expect((0..<1000).allSatisfy { _ in limiter.take("198.51.100.1", now: start) })
        #expect(limiter.trackedClients == 0)
    }

    @Test func memoryStaysBounded() {
        let limiter = ClientLimiter(rules: [.init(capacity: 5, perMinute: 1)], maxClients: 100)
        for index in 0..<1000 { _ = limiter.take("10.0.\(index / 256).\(index % 256)", now: start) }
        #expect(limiter.trackedClients <= 100)
    }
}

@Suite struct AbuseLimitRuleTests {
    @Test func plusTagVariantsShareTheCooldown() throws {
        let rulebook = try Rulebook()
        let first = SendRequest(
            kind: .signIn, email: "victim+1@example.com", settings: ActionCodeSettings(url: "https://app.example.com/x", handleCodeInApp: true))
        _ = try rulebook.actions.sending.send(first, as: .app)
        var second = first
        second.email = "VICTIM+2@example.com"
        #expect(code { _ = try rulebook.actions.sending.send(second, as: .app) } == "TOO_MANY_ATTEMPTS_TRY_LATER")
    }

    @Test func theProjectQuotaAnswersQuotaExceededToAppsOnly() throws {
        let rulebook = try Rulebook { $0.limits.projectSendsPerHour = 2 }
        let settings = ActionCodeSettings(url: "https://app.example.com/x", handleCodeInApp: true)
        for index in 0..<2 {
            _ = try rulebook.actions.sending.send(SendRequest(kind: .signIn, email: "q\(index)@example.com", settings: settings), as: .app)
        }
        let third = SendRequest(kind: .signIn, email: "q3@example.com", settings: settings)
        #expect(code { _ = try rulebook.actions.sending.send(third, as: .app) } == "QUOTA_EXCEEDED")
        _ = try rulebook.actions.sending.send(third, as: .admin)
    }

    @Test func aClientOverItsLimitIsRefusedBeforeTheLedger() throws {
        let rulebook = try Rulebook {
            $0.limits.ipBurst = 2
            $0.limits.ipSendsPerMinute = 2
        }
        let settings = ActionCodeSettings(url: "https://app.example.com/x", handleCodeInApp: true)
        var request = SendRequest(kind: .signIn, email: "a@example.com", settings: settings)
        request.clientIP = "198.51.100.7"
        for index in 0..<2 {
            request.email = "c\(index)@example.com"
            _ = try rulebook.actions.sending.send(request, as: .app)
        }
        request.email = "c9@example.com"
        #expect(code { _ = try rulebook.actions.sending.send(request, as: .app) } == "TOO_MANY_ATTEMPTS_TRY_LATER")
        let counts = try rulebook.actions.reports.abuseCounts(since: Date().addingTimeInterval(-3600))
        #expect(counts.map { "\($0.counter) \($0.key) \($0.count)" } == ["ip 198.51.100.0/24 1"])
    }

    @Test func emulatorModeKeepsOnlyTheNewestCodes() throws {
        let rulebook = try Rulebook { $0.server.emulatorMode = true }
        let settings = ActionCodeSettings(url: "https://app.example.com/x", handleCodeInApp: true)
        for index in 0..<1005 {
            _ = try rulebook.actions.sending.send(SendRequest(kind: .signIn, email: "e\(index)@example.com", settings: settings), as: .admin)
        }
        let codes = rulebook.actions.sending.emulatedCodes
        #expect(codes.count == 1000)
        #expect(codes.first?.email == "e5@example.com")
        #expect(codes.last?.email == "e1004@example.com")
    }
}
