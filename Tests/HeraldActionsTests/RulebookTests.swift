import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import HeraldStore
import Synchronization
import Testing

/// A fresh rulebook over a real ledger (a SQLite file by default), in either account-ownership mode.
struct Rulebook {
    let actions: Actions
    let store: any HeraldStore
    let directory: URL
    /// The console's test messages, answered `250` here instead of by a relay.
    let relay = TestRelay()

    init(owner: HeraldConfiguration.Accounts.Owner = .herald, ledger: TestLedger = .sqlite, _ change: (inout HeraldConfiguration) -> Void = { _ in })
        throws
    {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-actions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = HeraldConfiguration()
        configuration.accounts.owner = owner
        configuration.links.authorizedDomains = ["localhost", "app.example.com"]
        configuration.tokens.keyFile = directory.appendingPathComponent("signing-keys.json").path
        configuration.templatesDirectory = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../templates").path
        change(&configuration)
        store = try ledger.open(directory)
        let templates = try TemplateLibrary(directory: configuration.templatesDirectory, defaultLocale: configuration.links.defaultLocale)
        let relay = relay
        actions = Actions(
            configuration: configuration, store: store, composer: try MessageComposer(configuration: configuration, templates: templates),
            testSend: { composed in relay.take(composed) })
    }

    func file(_ name: String, _ text: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

/// Stands in for the worker's `SingleDelivery`: keeps each message it is handed and accepts it.
final class TestRelay: Sendable {
    private let taken = Mutex<[MessageComposer.Composed]>([])

    var messages: [MessageComposer.Composed] { taken.withLock { $0 } }

    func take(_ message: MessageComposer.Composed) -> DeliveryResult {
        taken.withLock { $0.append(message) }
        return DeliveryResult(outcome: .sent, replyCode: 250, replyText: "2.0.0 Ok: queued")
    }
}

/// The ledger a `Rulebook` runs over.
enum TestLedger: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    /// SQLite always; PostgreSQL where `HERALD_TEST_POSTGRES` names a cluster (`make test` starts one).
    static var available: [TestLedger] {
        ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES"] == nil ? [.sqlite] : [.sqlite, .postgres]
    }

    var testDescription: String { rawValue }

    func open(_ directory: URL) throws -> any HeraldStore {
        switch self {
        case .sqlite:
            return try SQLiteStore(path: directory.appendingPathComponent("ledger.sqlite").path)
        case .postgres:
            var location = try PostgresLocation(url: ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES"]!)
            location.schema = "t_async_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            return try PostgresStore(location: location, poolSize: 4)
        }
    }

    /// Whether the ledger's async durable writes suspend rather than block a thread.
    var suspends: Bool { self == .sqlite }
}

func code(of call: () throws -> Void) -> String? {
    do {
        try call()
        return nil
    } catch let error as HeraldError {
        return error.code.rawValue
    } catch {
        return "\(error)"
    }
}

@Suite struct SendingRuleTests {
    static let visitor = Visitor(ip: "127.0.0.1", userAgent: "tests")

    @Test func adminSeesTheTrueRefusalWhereAnAppGetsSilence() throws {
        let rulebook = try Rulebook()
        let reset = SendRequest(kind: .resetPassword, email: "nobody@example.org")
        #expect(code { _ = try rulebook.actions.sending.send(reset, as: .admin) } == "EMAIL_NOT_FOUND")
        #expect(try rulebook.actions.sending.send(reset, as: .app).delivery == .silent)
        let verify = SendRequest(kind: .verifyEmail, email: "nobody@example.org")
        #expect(code { _ = try rulebook.actions.sending.send(verify, as: .admin) } == "USER_NOT_FOUND")
        #expect(try rulebook.store.stateCounts().isEmpty)
    }

    @Test func campaignRowsAndBulkSendsAreRefusedWithTheSameCode() throws {
        let rulebook = try Rulebook()
        _ = try rulebook.actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .admin)
        let csv = try rulebook.file("people.csv", "email\nada@example.com\nnobody@example.org\n")
        let result = try rulebook.actions.campaigns.createCampaign(CampaignRequest(name: "resets", kind: .resetPassword, source: .csv(path: csv)))
        #expect(result.summary.imported == 1 && result.summary.rejected == 1)
        let rejects = try String(contentsOfFile: result.rejectsPath, encoding: .utf8)
        #expect(rejects == "line,reason,content\n3,EMAIL_NOT_FOUND,nobody@example.org\n")

        let bulk = SendRequest(kind: .resetPassword)
        #expect(throws: BulkSendError.self) { try rulebook.actions.sending.sendBulk(bulk, to: ["ada@example.com", "nobody@example.org"]) }
        #expect(try rulebook.actions.sending.sendBulk(bulk, to: ["ada@example.com", "ADA@example.com"]).newlyQueued == 2)
    }

    /// The console's review step: the campaign is paused before its first row is queued, so no claim takes a row
    /// until it is resumed; a taken name is refused instead of resuming that campaign's import.
    @Test func aCampaignStartedPausedQueuesItsRowsButNoneIsClaimedUntilResumed() throws {
        let rulebook = try Rulebook()
        _ = try rulebook.actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .admin)
        let csv = try rulebook.file("paused.csv", "email\nada@example.com\n")
        let request = CampaignRequest(
            name: "paused", kind: .resetPassword, source: .csv(path: csv), startPaused: true, requireNewName: true)
        let result = try rulebook.actions.campaigns.createCampaign(request)
        #expect(result.campaign.state == .paused && result.summary.imported == 1)
        let policy = ClaimPolicy(HeraldConfiguration())
        #expect(try rulebook.store.claim(policy).isEmpty)
        #expect(code { _ = try rulebook.actions.campaigns.createCampaign(request) } == "ARGUMENT_ERROR")
        #expect(try rulebook.store.counts(campaign: result.campaign.id) == [.queued: 1])
        try rulebook.actions.campaigns.resumeCampaign(id: result.campaign.id)
        #expect(try rulebook.store.claim(policy).count == 1)
    }

    @Test func singleSendsAreThrottledPerAddressAndAction() throws {
        let rulebook = try Rulebook(owner: .app)
        let request = SendRequest(kind: .verifyEmail, email: "ada@example.com")
        _ = try rulebook.actions.sending.send(request, as: .admin)
        #expect(code { _ = try rulebook.actions.sending.send(request, as: .admin) } == "TOO_MANY_ATTEMPTS_TRY_LATER")
        _ = try rulebook.actions.sending.send(SendRequest(kind: .resetPassword, email: "ada@example.com"), as: .admin)
    }

    @Test func returnLinkIsForAdminsAndQueuesNothing() throws {
        let rulebook = try Rulebook(owner: .app)
        let request = SendRequest(kind: .verifyEmail, email: "ada@example.com", returnLink: true)
        #expect(code { _ = try rulebook.actions.sending.send(request, as: .app) } == "INSUFFICIENT_PERMISSION")
        guard case .link(let plaintext, let link) = try rulebook.actions.sending.send(request, as: .admin).delivery else {
            Issue.record("expected a link")
            return
        }
        #expect(link.contains("oobCode=\(plaintext)"))
        #expect(try rulebook.store.stateCounts().isEmpty)
    }
}

/// The console's test send: the sample message goes to the injected sender (the worker's path to the relay), never
/// to the outbox, and suppressed or invalid addresses never reach it.
@Suite struct TemplateTestSendTests {
    @Test func theSampleMessageGoesToTheRelayAndItsAnswerComesBack() throws {
        let rulebook = try Rulebook()
        let result = try rulebook.actions.console.sendTemplateTest(.resetPassword, locale: try LocaleTag("en"), to: "ada@example.com")
        #expect(result == DeliveryResult(outcome: .sent, replyCode: 250, replyText: "2.0.0 Ok: queued"))
        let messages = rulebook.relay.messages
        #expect(messages.map(\.recipient) == ["ada@example.com"])
        let to = messages.flatMap { String(decoding: $0.bytes, as: UTF8.self).components(separatedBy: "\r\n").filter { $0.hasPrefix("To: ") } }
        #expect(to.count == 1 && to[0].contains("ada@example.com"))
        #expect(try rulebook.store.stateCounts().isEmpty)
    }

    @Test func suppressedAndInvalidAddressesAreRefusedBeforeTheRelay() throws {
        let rulebook = try Rulebook()
        try rulebook.actions.feedback.suppress(emails: ["gone@example.com"], reason: .hardBounce)
        let english = try LocaleTag("en")
        let suppressed = code { _ = try rulebook.actions.console.sendTemplateTest(.verifyEmail, locale: english, to: "gone@example.com") }
        #expect(suppressed == "RECIPIENT_SUPPRESSED")
        #expect(code { _ = try rulebook.actions.console.sendTemplateTest(.verifyEmail, locale: english, to: "not an address") } == "INVALID_EMAIL")
        #expect(rulebook.relay.messages.isEmpty)
    }
}

@Suite struct AccountOwnershipTests {
    static let visitor = Visitor(ip: "198.51.100.7", userAgent: "app-backend")

    @Test func appOwnedModeSendsAnywhereAndTheAppRedeemsOnce() throws {
        let rulebook = try Rulebook(owner: .app)
        let request = SendRequest(
            kind: .resetPassword, email: "anyone@example.org", settings: ActionCodeSettings(url: "https://app.example.com/done"),
            returnLink: true)
        guard case .link(let plaintext, _) = try rulebook.actions.sending.send(request, as: .admin).delivery else {
            Issue.record("expected a link")
            return
        }
        let inspected = try rulebook.actions.redemption.inspect(code: plaintext, visitor: Self.visitor)
        #expect(inspected.kind == .resetPassword && inspected.continueURL == "https://app.example.com/done")
        let redeemed = try rulebook.actions.redemption.redeemForApp(code: plaintext, visitor: Self.visitor)
        #expect(redeemed.email == "anyone@example.org")
        #expect(code { _ = try rulebook.actions.redemption.redeemForApp(code: plaintext, visitor: Self.visitor) } == "INVALID_OOB_CODE")
        #expect(try rulebook.store.accounts().isEmpty)
    }

    @Test func appOwnedModeRefusesAccountOperations() throws {
        let rulebook = try Rulebook(owner: .app)
        #expect(
            code { _ = try rulebook.actions.accounts.createAccount(SignUpRequest(email: "a@example.com", password: "secret-1"), as: .app) }
                == "OPERATION_NOT_ALLOWED")
        #expect(code { try rulebook.actions.accounts.listAccounts { _ in } } == "OPERATION_NOT_ALLOWED")
        #expect(code { _ = try rulebook.actions.redemption.applyVerification(code: "x", visitor: Self.visitor) } == "OPERATION_NOT_ALLOWED")
    }

    @Test func heraldOwnedModeAppliesTheEffectAndRefusesBareRedemption() throws {
        let rulebook = try Rulebook()
        _ = try rulebook.actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .admin)
        let request = SendRequest(kind: .verifyEmail, email: "ada@example.com", returnLink: true)
        guard case .link(let plaintext, _) = try rulebook.actions.sending.send(request, as: .admin).delivery else {
            Issue.record("expected a link")
            return
        }
        #expect(code { _ = try rulebook.actions.redemption.redeemForApp(code: plaintext, visitor: Self.visitor) } == "OPERATION_NOT_ALLOWED")
        let (account, info) = try rulebook.actions.redemption.applyVerification(code: plaintext, visitor: Self.visitor)
        #expect(account.emailVerified && info.kind == .verifyEmail)
    }
}
