import Testing

@testable import HeraldActions

/// Published vectors: Twitter's "Creating a signature" walk-through and RFC 5849's own examples.
@Suite struct OAuth1SignerTests {
    @Test func twitterDocumentedExampleGivesItsPublishedSignature() {
        let signer = OAuth1Signer(
            consumerKey: "xvz1evFS4wEEPTGEFPHBog", consumerSecret: "kAcSOqF21Fu85e7zjz7ZN2U4ZRhfV3WpwPAoE3Z7kBw")
        let header = signer.authorizationHeader(
            method: "POST",
            url: "https://api.twitter.com/1.1/statuses/update.json",
            queryItems: [("include_entities", "true"), ("status", "Hello Ladies + Gentlemen, a signed OAuth request!")],
            token: "370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb",
            tokenSecret: "LswwdoUaIvS8ltyTt5jkRh4J50vUPVVHtR2YPi5kE",
            nonce: "kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg",
            timestamp: 1_318_622_958
        )
        let expected =
            "OAuth oauth_consumer_key=\"xvz1evFS4wEEPTGEFPHBog\", "
            + "oauth_nonce=\"kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg\", "
            + "oauth_signature=\"hCtSmYh%2BiHYCEqBWrE7C7hYmtUk%3D\", "
            + "oauth_signature_method=\"HMAC-SHA1\", "
            + "oauth_timestamp=\"1318622958\", "
            + "oauth_token=\"370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb\", "
            + "oauth_version=\"1.0\""
        #expect(header == expected)
    }

    @Test func twitterDocumentedExampleHasItsPublishedBaseString() {
        let baseString = OAuth1Signer.signatureBaseString(
            method: "POST",
            url: "https://api.twitter.com/1.1/statuses/update.json?include_entities=true",
            parameters: [
                ("status", "Hello Ladies + Gentlemen, a signed OAuth request!"),
                ("oauth_consumer_key", "xvz1evFS4wEEPTGEFPHBog"),
                ("oauth_nonce", "kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg"),
                ("oauth_signature_method", "HMAC-SHA1"),
                ("oauth_timestamp", "1318622958"),
                ("oauth_token", "370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb"),
                ("oauth_version", "1.0"),
            ]
        )
        let expected =
            "POST&https%3A%2F%2Fapi.twitter.com%2F1.1%2Fstatuses%2Fupdate.json&include_entities%3Dtrue"
            + "%26oauth_consumer_key%3Dxvz1evFS4wEEPTGEFPHBog%26oauth_nonce%3DkYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg"
            + "%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D1318622958"
            + "%26oauth_token%3D370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb%26oauth_version%3D1.0"
            + "%26status%3DHello%2520Ladies%2520%252B%2520Gentlemen%252C%2520a%2520signed%2520OAuth%2520request%2521"
        #expect(baseString == expected)
    }

    /// RFC 5849 §3.4.1.1: query in the URI, a form body (`c2&a3=2+q`), repeated names sorted by value.
    @Test func rfc5849SignatureBaseStringExample() {
        let baseString = OAuth1Signer.signatureBaseString(
            method: "POST",
            url: "http://example.com/request?b5=%3D%253D&a3=a&c%40=&a2=r%20b",
            parameters: [
                ("oauth_consumer_key", "9djdj82h48djs9d2"),
                ("oauth_token", "kkk9d7dh3k39sjv7"),
                ("oauth_signature_method", "HMAC-SHA1"),
                ("oauth_timestamp", "137131201"),
                ("oauth_nonce", "7d8f3e4a"),
                ("c2", ""),
                ("a3", "2 q"),
            ]
        )
        let expected =
            "POST&http%3A%2F%2Fexample.com%2Frequest&a2%3Dr%2520b%26a3%3D2%2520q"
            + "%26a3%3Da%26b5%3D%253D%25253D%26c%2540%3D%26c2%3D%26oauth_consumer_"
            + "key%3D9djdj82h48djs9d2%26oauth_nonce%3D7d8f3e4a%26oauth_signature_m"
            + "ethod%3DHMAC-SHA1%26oauth_timestamp%3D137131201%26oauth_token%3Dkkk"
            + "9d7dh3k39sjv7"
        #expect(baseString == expected)
    }

    /// RFC 5849 §1.2: the photo-printing example, which signs without `oauth_version`.
    @Test func rfc5849PhotosExampleGivesItsPublishedSignature() {
        let signer = OAuth1Signer(consumerKey: "dpf43f3p2l4k3l03", consumerSecret: "kd94hf93k423kf44")
        let baseString = OAuth1Signer.signatureBaseString(
            method: "GET",
            url: "http://photos.example.net/photos?file=vacation.jpg&size=original",
            parameters: [
                ("oauth_consumer_key", "dpf43f3p2l4k3l03"),
                ("oauth_token", "nnch734d00sl2jdk"),
                ("oauth_signature_method", "HMAC-SHA1"),
                ("oauth_timestamp", "137131202"),
                ("oauth_nonce", "chapoH"),
            ]
        )
        #expect(signer.signature(of: baseString, tokenSecret: "pfkkdhi9sl3r4s00") == "MdpQcU8iPSUjWoN/UDMsK2sui9I=")
    }

    @Test(arguments: [
        ("abcXYZ019-._~", "abcXYZ019-._~"),
        ("Ladies + Gentlemen, signed!", "Ladies%20%2B%20Gentlemen%2C%20signed%21"),
        ("*'()/?:@=&%", "%2A%27%28%29%2F%3F%3A%40%3D%26%25"),
        ("é☃", "%C3%A9%E2%98%83"),
        ("", ""),
    ])
    func percentEncodingKeepsOnlyUnreservedBytes(text: String, encoded: String) {
        #expect(OAuth1Signer.percentEncode(text) == encoded)
    }

    /// RFC 5849 §3.4.1.2's two examples, then default ports, loopback ports, IPv6, user info and an empty path.
    @Test(arguments: [
        ("HTTP://EXAMPLE.COM:80/r%20v/X?id=123", "http://example.com/r%20v/X"),
        ("https://www.example.net:8080/?q=1", "https://www.example.net:8080/"),
        ("https://API.Twitter.com:443/1.1/account/verify_credentials.json", "https://api.twitter.com/1.1/account/verify_credentials.json"),
        ("http://127.0.0.1:8123/1.1/account/verify_credentials.json?a=b#frag", "http://127.0.0.1:8123/1.1/account/verify_credentials.json"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("https://[::1]:443/x", "https://[::1]/x"),
        ("http://[::1]:9000/x", "http://[::1]:9000/x"),
        ("http://user:pw@Example.com", "http://example.com/"),
    ])
    func baseStringURIIsNormalized(url: String, baseURI: String) {
        #expect(OAuth1Signer.splitURL(url).baseURI == baseURI)
    }

    @Test func queryInURLAndQueryItemsSignAlike() {
        let signer = OAuth1Signer(consumerKey: "key", consumerSecret: "secret")
        let url = "https://api.twitter.com/1.1/account/verify_credentials.json"
        let items = [("include_email", "true"), ("skip_status", "true")]
        let fromItems = signer.authorizationHeader(
            method: "GET", url: url, queryItems: items, token: "t", tokenSecret: "ts", nonce: "n", timestamp: 1)
        let fromURL = signer.authorizationHeader(
            method: "GET", url: url + "?include_email=true&skip_status=true", queryItems: [], token: "t", tokenSecret: "ts",
            nonce: "n", timestamp: 1)
        #expect(fromItems == fromURL)
    }

    @Test func anyChangedInputChangesTheSignature() {
        let signer = OAuth1Signer(consumerKey: "key", consumerSecret: "secret")
        func sign(tokenSecret: String = "ts", value: String = "true", method: String = "GET") -> String {
            signer.authorizationHeader(
                method: method, url: "https://x.test/v", queryItems: [("a", value)], token: "t", tokenSecret: tokenSecret,
                nonce: "n", timestamp: 1)
        }
        let original = sign()
        #expect(sign(tokenSecret: "other") != original)
        #expect(sign(value: "false") != original)
        #expect(sign(method: "POST") != original)
    }
}
