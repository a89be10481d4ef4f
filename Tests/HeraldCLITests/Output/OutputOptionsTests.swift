import Testing

@testable import HeraldCLI

@Suite struct OutputOptionsTests {
    @Test func jsonIsAnAliasOfFormatJSONAndTheDefaultIsTheCommands() throws {
        #expect(try OutputOptions.parse([]).resolved() == .table)
        #expect(try OutputOptions.parse([]).resolved(default: .jsonl) == .jsonl)
        #expect(try OutputOptions.parse(["--json"]).resolved() == .json)
        #expect(try OutputOptions.parse(["--format", "csv"]).resolved() == .csv)
        #expect(try OutputOptions.parse(["--json", "--format", "json"]).resolved() == .json)
        #expect(throws: (any Error).self) { try OutputOptions.parse(["--json", "--format", "csv"]).resolved() }
    }

    @Test func csvCellsAreQuotedAndInert() {
        #expect(RowWriter.csvCell("plain") == "plain")
        #expect(RowWriter.csvCell("a,b") == "\"a,b\"")
        #expect(RowWriter.csvCell("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(RowWriter.csvCell("=SUM(A1)") == "'=SUM(A1)")
    }
}
