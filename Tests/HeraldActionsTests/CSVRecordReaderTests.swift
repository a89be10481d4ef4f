import Foundation
import Testing

@testable import HeraldActions

@Suite struct CSVRecordReaderTests {
    @Test func strayQuoteInsideAFieldDoesNotSwallowTheFollowingLines() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).csv").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "email,display_name\na@example.com,Dwayne \"Rock\nb@example.com,\"Quoted, Name\"\nc@example.com,\"two\nlines\"\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        var reader = try CSVRecordReader(path: path)
        var records: [(Int, String)] = []
        while let (line, bytes) = try reader.next() { records.append((line, String(decoding: bytes, as: UTF8.self))) }
        #expect(records.map(\.0) == [1, 2, 3, 4])
        #expect(records[1].1 == "a@example.com,Dwayne \"Rock")
        #expect(records[3].1 == "c@example.com,\"two\nlines\"")
    }
}
