import HeraldCore
import Testing

@Suite struct IPNetworkTests {
    @Test func blocksContainTheirAddressesOnly() throws {
        let block = try IPNetwork("10.0.0.0/8")
        #expect(block.contains("10.200.3.4"))
        #expect(!block.contains("11.0.0.1"))
        #expect(block.contains("::ffff:10.1.1.1"))
        #expect(try IPNetwork("2001:db8::/32").contains("2001:db8:1::5"))
        #expect(!(try IPNetwork("127.0.0.1")).contains("127.0.0.2"))
    }

    @Test func badBlocksAreRefusedWithAClearError() {
        for text in ["10.0.0.0/33", "example.com", "10.0.0/8", "", "::1/129"] {
            #expect(throws: HeraldError.self) { try IPNetwork(text) }
        }
    }

    @Test func forwardedForIsBelievedOnlyFromATrustedPeer() throws {
        let proxies = [try IPNetwork("10.0.0.0/8")]
        // An untrusted peer is the client, whatever it forwards.
        #expect(IPNetwork.client(peer: "203.0.113.5", forwardedFor: ["198.51.100.1"], trusted: proxies) == "203.0.113.5")
        // Through a trusted proxy: the right-most address that is not a proxy.
        #expect(IPNetwork.client(peer: "10.0.0.2", forwardedFor: ["198.51.100.9, 198.51.100.1"], trusted: proxies) == "198.51.100.1")
        #expect(IPNetwork.client(peer: "10.0.0.2", forwardedFor: ["198.51.100.1, 10.0.0.7"], trusted: proxies) == "198.51.100.1")
        #expect(IPNetwork.client(peer: "10.0.0.2", forwardedFor: ["198.51.100.1", "10.3.3.3"], trusted: proxies) == "198.51.100.1")
        // Garbage in the header stops the walk at the last readable hop.
        #expect(IPNetwork.client(peer: "10.0.0.2", forwardedFor: ["nonsense"], trusted: proxies) == "10.0.0.2")
        #expect(IPNetwork.client(peer: "10.0.0.2", forwardedFor: [], trusted: proxies) == "10.0.0.2")
        // Hops some proxies write with a port, or IPv6 in brackets.
        #expect(IPNetwork.client(peer: "10.0.0.2", forwardedFor: ["198.51.100.1:5678"], trusted: proxies) == "198.51.100.1")
        #expect(IPNetwork.client(peer: "10.0.0.2", forwardedFor: ["[2001:db8::1]:443"], trusted: proxies) == "2001:db8::1")
        #expect(IPNetwork.client(peer: "10.0.0.2", forwardedFor: ["[2001:db8::1]"], trusted: proxies) == "2001:db8::1")
        #expect(IPNetwork.client(peer: "10.0.0.2", forwardedFor: ["2001:db8::1"], trusted: proxies) == "2001:db8::1")
    }

    @Test func theLedgerKeepsNetworksNotAddresses() {
        #expect(IPNetwork.ledgerKey("203.0.113.77") == "203.0.113.0/24")
        #expect(IPNetwork.ledgerKey("2001:db8:aaaa:bbbb::1") == "2001:db8:aaaa:0:0:0:0:0/48")
        #expect(IPNetwork.client("2001:db8::1") == IPNetwork.client("2001:db8::ffff"))
        #expect(IPNetwork.client("2001:db8::1") != IPNetwork.client("2001:db8:0:1::1"))
    }

    @Test func plusTagsAndCaseShareOneRecipientKey() throws {
        let aliases = RecipientAliases.standard
        #expect(aliases.key(try EmailAddress("Victim+1@Example.com")) == "victim@example.com")
        #expect(aliases.key(try EmailAddress("victim+a+b@example.com")) == "victim@example.com")
        #expect(aliases.key(try EmailAddress("victim@example.com")) == "victim@example.com")
        #expect(aliases.key(try EmailAddress("+only@example.com")) == "+only@example.com")
        #expect(RecipientAliases(ignorePlusTags: false).key(try EmailAddress("victim+1@example.com")) == "victim+1@example.com")
    }

    @Test func gmailDotsAndDomainsShareOneRecipientKey() throws {
        let aliases = RecipientAliases.standard
        for spelling in ["v.ictim@gmail.com", "Vic.Tim@gmail.com", "victim+x@googlemail.com", "v.i.c.t.i.m+y@GoogleMail.com"] {
            #expect(aliases.key(try EmailAddress(spelling)) == "victim@gmail.com")
        }
        // Dots count elsewhere, and when Gmail's rule is turned off.
        #expect(aliases.key(try EmailAddress("v.ictim@example.com")) == "v.ictim@example.com")
        #expect(RecipientAliases(dotlessDomains: []).key(try EmailAddress("v.ictim@gmail.com")) == "v.ictim@gmail.com")
        #expect(RecipientAliases(dotlessDomains: ["corp.example"]).key(try EmailAddress("a.b@Corp.Example")) == "ab@corp.example")
    }

    @Test func ipv6ClientsGroupByTheConfiguredPrefix() {
        #expect(IPNetwork.client("2001:db8:1:2::1", ipv6Prefix: 48) == IPNetwork.client("2001:db8:1:3::1", ipv6Prefix: 48))
        #expect(IPNetwork.client("2001:db8:1:2::1", ipv6Prefix: 48) != IPNetwork.client("2001:db8:2:2::1", ipv6Prefix: 48))
        #expect(IPNetwork.client("2001:db8:1:2::1") != IPNetwork.client("2001:db8:1:3::1"))
        // IPv4 stays per address whatever the IPv6 prefix.
        #expect(IPNetwork.client("192.0.2.1", ipv6Prefix: 48)?.description == "192.0.2.1/32")
    }
}
