import HeraldCore
import HeraldMail
import HeraldWorker
import Synchronization
import Testing

/// One message through a dispatcher from the worker's factory, as the console's test sends go.
@Suite(.timeLimit(.minutes(1))) struct SingleDeliveryTests {
    let fixture: WorkerFixture

    init() throws {
        fixture = try WorkerFixture()
    }

    func message(to recipient: String) throws -> MessageComposer.Composed {
        let configuration = HeraldConfiguration()
        let composer = try MessageComposer(configuration: configuration, templates: fixture.templates)
        return try composer.compose(
            try composer.sampleInput(.resetPassword, locale: try LocaleTag("en"), links: configuration.links, to: try EmailAddress(recipient)))
    }

    @Test(arguments: [DeliveryResult.accepted, .noSuchUser, .refused])
    func theRelaysAnswerComesBackFromOneLane(_ answer: DeliveryResult) throws {
        let server = ScriptedMailServer(otherwise: answer)
        let lanes = Mutex(0)
        let delivery = SingleDelivery(configuration: HeraldConfiguration()) { count in
            lanes.withLock { $0 += count }
            return ThreadedDispatcher((0..<count).map { _ in server.connect() })
        }
        #expect(try delivery.deliver(message(to: "ada@example.com")) == answer)
        #expect(lanes.withLock { $0 } == 1)
        #expect(server.received.map(\.recipients) == [["ada@example.com"]])
        #expect(server.received.map(\.sender) == ["noreply@herald-demo.example"])
    }
}
