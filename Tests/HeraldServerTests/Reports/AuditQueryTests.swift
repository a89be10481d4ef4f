import HeraldCore
import Testing

@testable import HeraldServer

@Suite struct AuditQueryTests {
    @Test func everyParameterBecomesItsFilter() throws {
        let query = AuditQuery(
            email: "Ada@Example.com", campaign: "7", action: "verifyEmail", since: "2026-01-01T00:00:00Z", until: nil, status: "expired")
        let filter = try query.filter()
        #expect(filter.email?.value == "ada@example.com")
        #expect(filter.campaign == 7)
        #expect(filter.kind == .verifyEmail)
        #expect(filter.since != nil && filter.until == nil)
        #expect(filter.status == .expired)
    }

    @Test func badParametersAreInvalidArguments() {
        for query in [AuditQuery(campaign: "x"), AuditQuery(action: "launch"), AuditQuery(since: "last tuesday"), AuditQuery(status: "sideways")] {
            let error = #expect(throws: HeraldError.self) { try query.filter() }
            #expect(error?.code == .invalidArgument)
        }
    }

    @Test func blankParametersMeanAnyAsTheConsoleFormSendsThem() throws {
        let filter = try AuditQuery(email: "", campaign: " ", action: "", since: "", until: "", status: "").filter()
        #expect(filter.email == nil && filter.campaign == nil && filter.kind == nil)
        #expect(filter.since == nil && filter.until == nil && filter.status == nil)
    }

    @Test func formatIsJSONLinesUnlessCSVIsAskedFor() throws {
        #expect(try AuditQuery().exportFormat() == .jsonl)
        #expect(try AuditQuery(format: "csv").exportFormat() == .csv)
        let error = #expect(throws: HeraldError.self) { try AuditQuery(format: "xml").exportFormat() }
        #expect(error?.code == .invalidArgument)
    }

    @Test func queryStringRepeatsTheFiltersEscaped() {
        let query = AuditQuery(email: "a+b@example.com", campaign: "", since: "2026-01-01T00:00:00+01:00", format: "csv")
        #expect(query.queryString == "email=a%2Bb@example.com&since=2026-01-01T00:00:00%2B01:00")
    }
}
