import Foundation
import GRDB
import HeraldCore
import Testing

@testable import HeraldStore

/// The redeem SQL on a real SQLite file: single use under concurrency, supersede, expired vs invalid.
@Suite struct RedemptionTests {
    let store: HeraldStore
    let visitor = Visitor(ip: "127.0.0.1", userAgent: "tests")

    init() throws {
        store = try HeraldStore(path: FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).sqlite").path)
    }

    func code(_ kind: ActionKind = .resetPassword, lifetime: TimeInterval = 3600) throws -> ActionCode {
        try store.mintCode(kind, email: "ada@example.com", newEmail: nil, lifetime: lifetime)
    }

    func failure(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as HeraldError {
            return error.code.rawValue
        } catch {
            return "\(error)"
        }
    }

    @Test func fiftyConcurrentRedemptionsHaveOneWinner() async throws {
        let code = try code().plaintext
        let store = self.store
        let visitor = self.visitor
        let wins = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    (try? store.redeem(code, expecting: [.resetPassword], visitor: visitor) { _, _ in true }) ?? false
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(wins == 1)
        let events = try store.read { db in try String.fetchAll(db, sql: "SELECT kind FROM link_events ORDER BY id") }
        #expect(events.filter { $0 == "redeemed" }.count == 1)
        #expect(events.filter { $0 == "rejected" }.count == 49)
    }

    @Test func redeemingSupersedesTheFamily() throws {
        let older = try code().plaintext
        let newer = try code().plaintext
        let otherAction = try code(.verifyEmail).plaintext
        try store.redeem(newer, expecting: [.resetPassword], visitor: visitor) { _, _ in }
        #expect(failure { try store.redeem(older, expecting: [.resetPassword], visitor: visitor) { _, _ in } } == "INVALID_OOB_CODE")
        #expect(failure { try store.redeem(otherAction, expecting: [.verifyEmail], visitor: visitor) { _, _ in } } == nil)
    }

    @Test func expiredIsDistinctFromInvalid() throws {
        let expired = try code(lifetime: 0.001).plaintext
        Thread.sleep(forTimeInterval: 0.01)
        #expect(failure { try store.redeem(expired, expecting: [.resetPassword], visitor: visitor) { _, _ in } } == "EXPIRED_OOB_CODE")
        #expect(failure { try store.redeem("no-such-code", expecting: [.resetPassword], visitor: visitor) { _, _ in } } == "INVALID_OOB_CODE")
        let wrongKind = try code(.signIn).plaintext
        #expect(failure { try store.redeem(wrongKind, expecting: [.resetPassword], visitor: visitor) { _, _ in } } == "INVALID_OOB_CODE")
        // A rejected attempt of the wrong kind must not burn the code.
        #expect(failure { try store.redeem(wrongKind, expecting: [.signIn], visitor: visitor) { _, _ in } } == nil)
    }

    @Test func failedEffectLeavesTheCodeUnused() throws {
        let code = try code().plaintext
        #expect(
            failure { try store.redeem(code, expecting: [.resetPassword], visitor: visitor) { _, _ in throw HeraldError(.emailNotFound, "") } }
                == "EMAIL_NOT_FOUND")
        #expect(failure { try store.redeem(code, expecting: [.resetPassword], visitor: visitor) { _, _ in } } == nil)
    }

    @Test func throttledEnqueueEnforcesCooldownAndDailyCap() throws {
        let links = HeraldConfiguration.Links()
        let request = try ActionRequest(kind: .resetPassword, email: "ada@example.com", links: links)
        let start = Date()
        try store.enqueue(request, messageDomain: "herald.test", cooldown: 60, dailyCap: 2, now: start)
        #expect(
            failure { try store.enqueue(request, messageDomain: "herald.test", cooldown: 60, dailyCap: 2, now: start.addingTimeInterval(30)) }
                == "TOO_MANY_ATTEMPTS_TRY_LATER")
        try store.enqueue(request, messageDomain: "herald.test", cooldown: 60, dailyCap: 2, now: start.addingTimeInterval(61))
        #expect(
            failure { try store.enqueue(request, messageDomain: "herald.test", cooldown: 60, dailyCap: 2, now: start.addingTimeInterval(200)) }
                == "TOO_MANY_ATTEMPTS_TRY_LATER")
    }
}
