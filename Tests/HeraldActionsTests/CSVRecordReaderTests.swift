import Foundation
import HeraldCore
import Testing

@testable import HeraldActions

@Suite struct CSVRecordReaderTests {
    /// One record as the tests compare it: line, defect, text.
    struct Read: Equatable, CustomStringConvertible {
        var line: Int
        var defect: CSVRecordReader.Defect?
        var text: String
        var description: String { "\(line) \(defect.map { "\($0)" } ?? "ok") \(text.debugDescription)" }
    }

    private func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).csv").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func records(_ bytes: [UInt8], expectedFields: Int? = nil, chunkSize: Int = CSVRecordReader.chunkSize) throws -> [Read] {
        let path = try temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var reader = try CSVRecordReader(path: path, chunkSize: chunkSize)
        reader.expectedFields = expectedFields
        var records: [Read] = []
        while let record = try reader.next() {
            records.append(Read(line: record.line, defect: record.defect, text: String(decoding: record.bytes, as: UTF8.self)))
        }
        return records
    }

    private func records(_ text: String, expectedFields: Int? = nil) throws -> [Read] {
        try records(Array(text.utf8), expectedFields: expectedFields)
    }

    @Test func strayQuoteInsideAFieldDoesNotSwallowTheFollowingLines() throws {
        let read = try records("email,display_name\na@example.com,Dwayne \"Rock\nb@example.com,\"Quoted, Name\"\nc@example.com,\"two\nlines\"\n")
        #expect(read.map(\.line) == [1, 2, 3, 4])
        #expect(read[1].text == "a@example.com,Dwayne \"Rock")
        #expect(read[3].text == "c@example.com,\"two\nlines\"")
    }

    @Test func byteOrderMarkBeforeTheHeaderIsSkipped() throws {
        let read = try records([0xEF, 0xBB, 0xBF] + Array("email,plan\na@example.com,gold\n".utf8))
        #expect(read == [Read(line: 1, text: "email,plan"), Read(line: 2, text: "a@example.com,gold")])
    }

    @Test func carriageReturnLineFeedAndMixedLineEndsEachEndARecord() throws {
        #expect(try records("email\ra@x.test\rb@x.test\r").map(\.text) == ["email", "a@x.test", "b@x.test"])
        let mixed = try records("email\r\na@x.test\rb@x.test\nc@x.test\r\n\r\nd@x.test")
        #expect(mixed.map(\.line) == [1, 2, 3, 4, 5, 6])
        #expect(mixed.map(\.text) == ["email", "a@x.test", "b@x.test", "c@x.test", "", "d@x.test"])
    }

    @Test func lineEndsInsideQuotesAreContentAndCountAsLines() throws {
        let read = try records("email,note\ra@x.test,\"one\rtwo\r\nthree\"\rb@x.test,ok\r", expectedFields: 2)
        #expect(
            read == [
                Read(line: 1, text: "email,note"), Read(line: 2, text: "a@x.test,\"one\rtwo\r\nthree\""), Read(line: 5, text: "b@x.test,ok"),
            ])
    }

    @Test func quotedFieldSpanningLinesWithTheHeaderFieldCountIsOneRecord() throws {
        let read = try records("email,note\na@x.test,\"say \"\"hi\"\"\nthen go\"\nb@x.test,ok\n", expectedFields: 2)
        #expect(
            read == [
                Read(line: 1, text: "email,note"), Read(line: 2, text: "a@x.test,\"say \"\"hi\"\"\nthen go\""), Read(line: 4, text: "b@x.test,ok"),
            ])
    }

    @Test func unterminatedQuoteRejectsOnlyItsLineAndReadingResumesAtTheNext() throws {
        let text = "email,name\na@x.test,\"Smith\nb@x.test,Bob\nc@x.test,\"Jones, C\"\nd@x.test,D\n"
        #expect(
            try records(text, expectedFields: 2) == [
                Read(line: 1, text: "email,name"), Read(line: 2, defect: .unterminatedQuote, text: "a@x.test,\"Smith"),
                Read(line: 3, text: "b@x.test,Bob"), Read(line: 4, text: "c@x.test,\"Jones, C\""), Read(line: 5, text: "d@x.test,D"),
            ])
    }

    @Test func quoteNeverClosedBeforeTheEndOfTheFileRejectsOnlyItsLine() throws {
        let read = try records("email,name\na@x.test,\"Smith\r\nb@x.test,Bob\r\nc@x.test,Cy", expectedFields: 2)
        #expect(
            read == [
                Read(line: 1, text: "email,name"), Read(line: 2, defect: .unterminatedQuote, text: "a@x.test,\"Smith"),
                Read(line: 3, text: "b@x.test,Bob"), Read(line: 4, text: "c@x.test,Cy"),
            ])
        #expect(try records("email\n\"a@x.test") == [Read(line: 1, text: "email"), Read(line: 2, defect: .unterminatedQuote, text: "\"a@x.test")])
    }

    @Test func recordSpanningLinesWithAnotherFieldCountRestartsAtItsSecondLine() throws {
        let read = try records("email,name\na@x.test,\"A\nB\",extra\nc@x.test,C\n", expectedFields: 2)
        #expect(
            read == [
                Read(line: 1, text: "email,name"), Read(line: 2, defect: .unterminatedQuote, text: "a@x.test,\"A"),
                Read(line: 3, text: "B\",extra"), Read(line: 4, text: "c@x.test,C"),
            ])
    }

    @Test func recordOverTheLimitIsCutAndTheRestOfItsLineSkipped() throws {
        let long = "a@x.test," + String(repeating: "x", count: CSVRecordReader.maximumRecord * 3)
        let read = try records("email,plan\n\(long)\nb@x.test,gold\n", expectedFields: 2)
        #expect(read.map(\.line) == [1, 2, 3])
        #expect(read[1].defect == .tooLong && read[1].text.utf8.count == CSVRecordReader.maximumRecord)
        #expect(read[2] == Read(line: 3, text: "b@x.test,gold"))
    }

    @Test func quoteLeftOpenPastTheLimitRejectsItsFirstLine() throws {
        let filler = String(repeating: "b@x.test,Bob\n", count: CSVRecordReader.maximumRecord / 8)
        let read = try records("email,name\na@x.test,\"Smith\n\(filler)c@x.test,C\n", expectedFields: 2)
        #expect(read[1] == Read(line: 2, defect: .unterminatedQuote, text: "a@x.test,\"Smith"))
        #expect(read.dropFirst(2).allSatisfy { $0.defect == nil })
        #expect(read.last == Read(line: CSVRecordReader.maximumRecord / 8 + 3, text: "c@x.test,C"))
    }

    @Test func chunkBoundariesNeverChangeTheRecords() throws {
        let text = "\u{FEFF}email,note\r\na@x.test,\"x\r\ny\"\rb@x.test,\"open\r\nc@x.test,\"q\"\"\"\r\n\rd@x.test,z"
        let whole = try records(Array(text.utf8), expectedFields: 2)
        for chunkSize in [1, 2, 3, 5, 8] {
            #expect(try records(Array(text.utf8), expectedFields: 2, chunkSize: chunkSize) == whole, "chunk size \(chunkSize)")
        }
        #expect(whole.map(\.line) == [1, 2, 4, 5, 6, 7])
        #expect(whole[2] == Read(line: 4, defect: .unterminatedQuote, text: "b@x.test,\"open"))
    }

    @Test func quoteFollowedByACombiningMarkIsStillAQuote() throws {
        #expect(try CSVLine.parse("\"a\"\"\u{301}\",b") == ["a\"\u{301}", "b"])
        #expect(try CSVLine.parse("\"\u{301}x\",y") == ["\u{301}x", "y"])
        #expect(throws: HeraldError.self) { try CSVLine.parse("\"open\u{301},b") }
    }

    @Test func rejectsFileReadsBackAsTheContentItWasGiven() throws {
        let nasty = [
            "plain", "a,b", "\"\u{301}quoted", "ends\"\u{301}", "x\r\ny", "lone\rcr", "lf\nonly", " lead", "trail ", "\"", "",
            "e\u{301}\u{20AC}\u{1F600}\",\"\u{301}\n",
        ]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).csv").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try RejectsWriter(path: path)
        for (index, content) in nasty.enumerated() { writer.write(line: index + 2, reason: "why \"\u{301}", content: content) }
        writer.close()
        var reader = try CSVRecordReader(path: path)
        reader.expectedFields = 3
        var rows: [[String]] = []
        while let record = try reader.next() { rows.append(try CSVLine.parse(String(decoding: record.bytes, as: UTF8.self))) }
        #expect(rows.first == ["line", "reason", "content"])
        #expect(Array(rows.dropFirst()) == nasty.enumerated().map { ["\($0.offset + 2)", "why \"\u{301}", $0.element] })
    }
}
