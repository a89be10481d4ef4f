import Foundation
import GRDB
import HeraldCore
import Testing

@testable import HeraldStore

@Suite struct CampaignStoreTests {
    let store: HeraldStore
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try HeraldStore(path: directory.appendingPathComponent("ledger.sqlite").path)
    }

    @Test func strayQuoteInsideAFieldDoesNotSwallowTheFollowingLines() throws {
        let path = directory.appendingPathComponent("r.csv").path
        try "email,display_name\na@example.com,Dwayne \"Rock\nb@example.com,\"Quoted, Name\"\nc@example.com,\"two\nlines\"\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        var reader = try CSVRecordReader(path: path)
        var records: [(Int, String)] = []
        while let (line, bytes) = try reader.next() { records.append((line, String(decoding: bytes, as: UTF8.self))) }
        #expect(records.map(\.0) == [1, 2, 3, 4])
        #expect(records[1].1 == "a@example.com,Dwayne \"Rock")
        #expect(records[3].1 == "c@example.com,\"two\nlines\"")
    }

    @Test func campaignRowsAreNotExpiredByTheTransactionalQueueWait() throws {
        let campaign = try store.campaign(
            named: "resets", kind: .resetPassword, settings: ActionCodeSettings(), rate: nil, startAt: Date(), linkLifetime: nil,
            source: "test")
        let path = directory.appendingPathComponent("r.csv").path
        try "email\na@example.com\n".write(toFile: path, atomically: true, encoding: .utf8)
        let importer = try CampaignImporter(store: store, campaign: campaign, defaultLocale: LocaleTag("en"), messageDomain: "herald.test")
        #expect(try importer.importCSV(path: path, rejectsPath: path + ".rejects").imported == 1)
        var configuration = HeraldConfiguration()
        configuration.worker.maxQueueWait = [.resetPassword: 60]
        let claimed = try store.claim(ClaimPolicy(configuration), now: Date().addingTimeInterval(3600))
        #expect(claimed.map(\.message.campaignID) == [campaign.id])
    }

    @Test func pausedCampaignsAreNotClaimedAndCancelMarksUnsentRows() throws {
        let campaign = try store.campaign(
            named: "verify", kind: .verifyEmail, settings: ActionCodeSettings(), rate: nil, startAt: Date(), linkLifetime: nil, source: "test")
        let path = directory.appendingPathComponent("v.csv").path
        try "email\na@example.com\nb@example.com\n".write(toFile: path, atomically: true, encoding: .utf8)
        let importer = try CampaignImporter(store: store, campaign: campaign, defaultLocale: LocaleTag("en"), messageDomain: "herald.test")
        _ = try importer.importCSV(path: path, rejectsPath: path + ".rejects")
        let policy = ClaimPolicy(HeraldConfiguration())
        try store.pause(campaign: campaign.id)
        #expect(try store.claim(policy).isEmpty)
        #expect(try store.cancel(campaign: campaign.id) == 2)
        #expect(try store.counts(campaign: campaign.id) == [.cancelled: 2])
    }
}
