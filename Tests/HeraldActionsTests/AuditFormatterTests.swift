import Foundation
import HeraldActions
import HeraldCore
import Testing

@Suite struct AuditFormatterTests {
    static func row(userAgent: String?, reply: String?) -> AuditRow {
        AuditRow(
            id: 7, recipient: "ada@example.com", action: "reset-password", campaign: nil, state: "sent",
            queuedAt: Date(timeIntervalSince1970: 1_700_000_000), sentAt: nil, smtpReply: reply, firstClickAt: nil, redeemedAt: nil,
            redeemedIP: "203.0.113.9", redeemedUserAgent: userAgent, expired: false, superseded: false)
    }

    @Test func csvCellsThatASpreadsheetWouldRunAreMadeInert() throws {
        let line = AuditFormatter.line(Self.row(userAgent: "=HYPERLINK(\"http://x\",\"y\")", reply: "-2+3"), .csv)
        let cells = try CSVLine.parse(line)
        #expect(cells.contains("'=HYPERLINK(\"http://x\",\"y\")"))
        #expect(cells.contains("'-2+3"))
        #expect(cells.allSatisfy { !["=", "+", "-", "@"].contains($0.first.map(String.init) ?? "") })
    }

    @Test func ordinaryCellsAreWrittenAsTheyAre() throws {
        let cells = try CSVLine.parse(AuditFormatter.line(Self.row(userAgent: "Mozilla/5.0, like Gecko", reply: "250 2.0.0 Ok"), .csv))
        #expect(cells.contains("Mozilla/5.0, like Gecko") && cells.contains("250 2.0.0 Ok") && cells.contains("ada@example.com"))
    }
}
