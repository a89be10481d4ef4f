import Foundation
import HeraldCore
import HeraldTesting
import NIOSSL
import Testing

@testable import HeraldStore

/// The PostgreSQL store's plumbing: where a URL points, and how the ledger's placeholders reach the server.
@Suite struct PostgresPlumbingTests {
    @Test func urlNamesHostPortUserDatabaseAndSchemaAndTakesThePasswordFromTheEnvironment() throws {
        let location = try PostgresLocation(
            url: "postgres://herald@db.internal:6432/ledger?schema=eu_1", environment: ["HERALD_DATABASE_PASSWORD": "s3cret"])
        #expect(location.host == "db.internal")
        #expect(location.port == 6432)
        #expect(location.user == "herald")
        #expect(location.database == "ledger")
        #expect(location.schema == "eu_1")
        #expect(location.password == "s3cret")
        #expect(!location.description.contains("s3cret"))
        let defaults = try PostgresLocation(url: "postgresql://h@localhost/herald", environment: ["PGPASSWORD": "pw"])
        #expect(defaults.port == 5432 && defaults.schema == nil && defaults.password == "pw")
    }

    @Test func sslModeAndRootCertificateAreLibpqs() throws {
        #expect(try PostgresLocation(url: "postgres://h@db/herald", environment: [:]).tls == .prefer)
        let verified = try PostgresLocation(url: "postgres://h@db/herald?sslmode=verify-full&sslrootcert=/etc/ca.pem", environment: [:])
        #expect(verified.tls == .verifyFull && verified.rootCertificate == "/etc/ca.pem")
        #expect(verified.description == "postgres://h@db:5432/herald?sslmode=verify-full&sslrootcert=/etc/ca.pem")
        for mode in PostgresLocation.TLSMode.allCases {
            #expect(try PostgresLocation(url: "postgres://h@db/herald?sslmode=\(mode.rawValue)", environment: [:]).tls == mode)
        }
    }

    @Test func onlyARefusedCertificateIsAConfigurationErrorNotAHandshakeCutShort() {
        #expect(PostgresPool.isCertificateRefusal(NIOSSLExtraError.failedToValidateHostname))
        #expect(PostgresPool.isCertificateRefusal(NIOSSLError.handshakeFailed(.sslError([]))) == false)
        #expect(PostgresPool.isCertificateRefusal(NIOSSLError.uncleanShutdown) == false)
    }

    @Test func anUnreadableRootCertificateStopsTheStoreBeforeItConnects() throws {
        let location = try PostgresLocation(url: "postgres://h@127.0.0.1:1/herald?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem")
        let error = #expect(throws: HeraldError.self) { try location.connectionTLS() }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.detail.contains("/nonexistent/ca.pem") == true)
    }

    @Test(arguments: [
        "postgres://u@host/herald?sslmode=allow", "postgres://u@host/herald?sslmode=", "postgres://u@host/herald?sslrootcert=ca.pem",
        "postgres://u@host/herald?sslmode=disable&sslrootcert=ca.pem",
        "postgres://localhost/herald", "postgres://u@/herald", "postgres://u@host", "postgres://u:pw@host/herald",
        "postgres://u@host/herald?schema=Bad-Name", "mysql://u@host/db",
    ])
    func badURLsAreConfigurationErrorsNamingTheProblem(_ url: String) {
        let error = #expect(throws: HeraldError.self) { try PostgresLocation(url: url, environment: [:]) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.detail.hasPrefix("database.url: ") == true)
    }

    @Test func placeholdersBecomeNumberedParametersOutsideLiteralsAndCasts() throws {
        let (positional, values) = try PostgresSQL.rewrite(
            "SELECT '?:x', ?::bigint, \"a?\" FROM t WHERE a = ? AND b = ?2 -- a ? comment\n AND c = $1", [1, "two"])
        #expect(positional == "SELECT '?:x', $1::bigint, \"a?\" FROM t WHERE a = $2 AND b = $2 \n AND c = $1")
        #expect(values == [.int(1), .text("two")])
        let (named, namedValues) = try PostgresSQL.rewrite(
            "UPDATE t SET a = :now::bigint, b = :now WHERE s = 'x:y' AND id = :id", ["now": 5, "id": Int64(9)])
        #expect(named == "UPDATE t SET a = $1::bigint, b = $1 WHERE s = 'x:y' AND id = $2")
        #expect(namedValues == [.int(5), .int(9)])
    }

    @Test func aMissingArgumentIsAnErrorNotAQuery() {
        #expect(throws: PostgresFailure.self) { try PostgresSQL.rewrite("SELECT ?, ?", [1]) }
        #expect(throws: PostgresFailure.self) { try PostgresSQL.rewrite("SELECT :a", ["b": 1]) }
    }
}
