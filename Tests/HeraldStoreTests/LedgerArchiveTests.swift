import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The message archive's files: gzip members of audit JSON lines, appended a prune step at a time and read back.
@Suite struct LedgerArchiveTests {
    let scratch = ScratchDirectory()
    let now = Date(timeIntervalSince1970: 1_790_000_000)

    func row(_ id: Int64, redeemed: Bool = false, email: String? = nil) -> AuditRow {
        AuditRow(
            id: id, recipient: "r\(id)@example.com", action: id.isMultiple(of: 2) ? "resetPassword" : "verifyEmail", campaign: id > 2 ? 7 : nil,
            state: "sent", queuedAt: now.addingTimeInterval(Double(id)), sentAt: now.addingTimeInterval(Double(id) + 1),
            smtpReply: "250 2.0.0 Ok: queued as \(id)", firstClickAt: redeemed ? now.addingTimeInterval(60) : nil,
            redeemedAt: redeemed ? now.addingTimeInterval(90) : nil, redeemedIP: redeemed ? "203.0.113.9" : nil,
            redeemedUserAgent: redeemed ? "Mozilla/5.0 \"quoted\"" : nil, expired: !redeemed, superseded: false,
            feedbackAt: nil, feedback: nil, redeemedWith: redeemed ? "link" : nil, email: email)
    }

    func lines(_ rows: [AuditRow]) throws -> [Data] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try rows.map { try encoder.encode($0) }
    }

    func readAll(_ path: String) throws -> (rows: [AuditRow], warnings: [String]) {
        var rows: [AuditRow] = []
        var warnings: [String] = []
        try LedgerArchive.read(path, warn: { warnings.append($0) }) { rows.append($0) }
        return (rows, warnings)
    }

    @Test func stepsAppendGzipMembersThatReadBackAsOneStreamOfAuditRows() throws {
        let archive = try LedgerArchive(directory: scratch.path("archive"))
        let file = archive.file(began: now, worker: "0a1b2c3d")
        #expect(file.path.hasSuffix("/herald-archive-20260921T141320Z-0a1b2c3d.jsonl.gz"))
        let first = [row(1, redeemed: true), row(2, email: "old@example.com")]
        let second = [row(3)]
        try file.append(first)
        try file.append([])
        try file.append(second)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file.path))
        #expect(bytes.prefix(2) == Data([0x1f, 0x8b]), "gzip")
        let read = try readAll(file.path)
        #expect(read.warnings.isEmpty)
        #expect(try lines(read.rows) == lines(first + second))
        #expect(read.rows[1].email == "old@example.com" && read.rows[0].email == nil)
        #expect(try LedgerArchive.files(at: archive.directory) == [file.path])
        #expect(try LedgerArchive.files(at: file.path) == [file.path])
        // A sweep that starts a new file in the same second (after a failed append) gets a name of its own.
        let next = archive.file(began: now, worker: "0a1b2c3d")
        #expect(next.path.hasSuffix("/herald-archive-20260921T141320Z-0a1b2c3d-2.jsonl.gz"))
    }

    @Test func aFileCutInsideAMemberReadsTheWholeLinesBeforeTheCutAndWarns() throws {
        let file = try LedgerArchive(directory: scratch.path("archive")).file(began: now, worker: "w")
        try file.append([row(1), row(2)])
        let whole = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as! Int
        try file.append((3...60).map { row($0) })
        let handle = try #require(FileHandle(forUpdatingAtPath: file.path))
        try handle.truncate(atOffset: UInt64(whole + 40))
        try handle.close()
        let read = try readAll(file.path)
        #expect(read.rows.map(\.id) == [1, 2])
        #expect(read.warnings.count == 1 && read.warnings[0].contains("ends inside a gzip member"))
    }

    @Test func aFileDamagedInsideAMemberReadsTheLinesBeforeAndWarns() throws {
        let file = try LedgerArchive(directory: scratch.path("archive")).file(began: now, worker: "w")
        try file.append([row(1), row(2)])
        let whole = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as! Int
        try file.append((3...60).map { row($0) })
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file.path))
        // The second member's first deflate block, after its 10-byte header, made a reserved block type.
        bytes[whole + 10] = 0x07
        try bytes.write(to: URL(fileURLWithPath: file.path))
        let read = try readAll(file.path)
        #expect(read.rows.map(\.id) == [1, 2])
        #expect(read.warnings.count == 1 && read.warnings[0].contains("is damaged after line 2"), "\(read.warnings)")
    }

    @Test func anAppendThatCannotBeWrittenThrowsAWriteFailure() throws {
        let archive = try LedgerArchive(directory: scratch.path("archive"))
        let file = archive.file(began: now, worker: "full")
        try FileManager.default.createSymbolicLink(atPath: file.path, withDestinationPath: "/dev/full")
        #expect(throws: LedgerArchive.WriteFailure.self) { try file.append([row(1)]) }
        #expect(!FileManager.default.fileExists(atPath: file.path), "what the failed first append made is gone")
        let taken = archive.file(began: now, worker: "dir")
        try FileManager.default.createDirectory(atPath: taken.path, withIntermediateDirectories: true)
        #expect(throws: LedgerArchive.WriteFailure.self) { try taken.append([row(1)]) }
    }

    @Test func aDirectoryThatCannotBeMadeIsBadConfigurationAndAnArchiveOfNoneIsNil() throws {
        let plain = scratch.path("plain")
        try Data("x".utf8).write(to: URL(fileURLWithPath: plain))
        #expect(throws: HeraldError.self) { try LedgerArchive(directory: plain + "/archive") }
        var ledger = HeraldConfiguration.Ledger()
        #expect(try LedgerArchive(ledger) == nil)
        ledger.archive = scratch.path("made/here")
        #expect(try LedgerArchive(ledger)?.directory == scratch.path("made/here"))
        #expect(FileManager.default.fileExists(atPath: scratch.path("made/here")))
    }

    @Test func aLineThatIsNotAnAuditRowNamesTheFileAndLine() throws {
        let path = scratch.path("bad.jsonl.gz")
        // zlib reads a file that is not gzip as it is.
        var bytes = try lines([row(1)])[0]
        bytes.append(contentsOf: "\n{\"id\": \"seven\"}\n".utf8)
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try readAll(path)
        } throws: { error in
            "\(error)".contains("bad.jsonl.gz line 2 is not an archived message: id: ")
        }
    }
}
