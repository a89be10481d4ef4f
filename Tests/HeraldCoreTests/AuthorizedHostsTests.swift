import HeraldCore
import Testing

@Suite struct AuthorizedHostsTests {
    @Test func localhostAlsoAdmitsTheLoopbackAddresses() {
        let hosts = AuthorizedHosts(domains: ["App.Example.com", "LOCALHOST"])
        #expect(hosts.names == ["app.example.com", "localhost", "127.0.0.1", "[::1]"])
        for host in ["app.example.com", "APP.example.com", "localhost", "127.0.0.1", "[::1]"] {
            #expect(hosts.contains(host), "\(host)")
        }
        #expect(!hosts.contains("127.0.0.2"))
        #expect(!hosts.contains("example.com"))
    }

    @Test func withoutLocalhostTheLoopbackAddressesAreRefused() {
        let hosts = AuthorizedHosts(domains: ["app.example.com", "app.example.com"])
        #expect(hosts.names == ["app.example.com"])
        #expect(!hosts.contains("127.0.0.1"))
        #expect(!hosts.contains("[::1]"))
    }

    @Test func listingALoopbackAddressAndLocalhostNamesItOnce() {
        #expect(AuthorizedHosts(domains: ["127.0.0.1", "localhost"]).names == ["127.0.0.1", "localhost", "[::1]"])
    }
}
