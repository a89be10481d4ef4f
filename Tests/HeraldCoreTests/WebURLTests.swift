import Foundation
import Testing

@testable import HeraldCore

/// WebURL against real Chromium (Tests/support/url_table.json, recorded by scripts/record-url-table.py):
/// every row Chromium fails, WebURL fails; every row WebURL accepts, it reads exactly as Chromium does;
/// the http(s) rows Chromium accepts and WebURL refuses are the `refusals` below, each with its reason.
@Suite struct WebURLTests {
    struct Row: Decodable {
        let input: String
        let ok: Bool
        let href: String?
        let `protocol`: String?
        let hostname: String?
        let port: String?

        var isHTTP: Bool { ok && (`protocol` == "http:" || `protocol` == "https:") }
    }

    struct Table: Decodable {
        let chromium: String
        let rows: [Row]
    }

    static let tablePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appending(path: "../support/url_table.json").standardized

    static func table() throws -> Table {
        try JSONDecoder().decode(Table.self, from: Data(contentsOf: tablePath))
    }

    /// Inputs Chromium accepts as http(s) that WebURL refuses on purpose: refusing is safe, guessing is not.
    static let refusals: [(reason: String, inputs: [String])] = [
        (
            "space in the host: Chromium percent-encodes it, the URL Standard fails it",
            [
                "https:// /", "https://ev il.com/", "https://ev\u{A0}il.com/", "https://a%20b.com/", "https://%20/",
                "https://evil.com%20.app.example.com/", "https://evil.com .app.example.com/",
            ]
        ),
        (
            "`*` in the host: Chromium percent-encodes it, the URL Standard keeps it",
            [
                "https://a*b.com/", "https://a%2Ab.com/", "https://evil.com*.app.example.com/", "https://a＊b.example/",
            ]
        ),
        (
            "default-ignorable code point in the host: refused rather than dropped",
            [
                "https://ev\u{200B}il.com/", "https://ev\u{AD}il.com/", "https://ev%E2%80%8Bil.com/",
                "https://ev%C2%ADil.com/", "https://a\u{FE0F}b.example/", "https://a\u{34F}b.example/",
                "https://app.example.com\u{200B}/", "https://app.example.com\u{AD}/", "https://app.example.com\u{2060}/",
                "https://app.example.com\u{FEFF}/", "https://app.example.com\u{180E}/", "https://app.example.com\u{34F}/",
            ]
        ),
        (
            "`xn--` label not canonical Punycode of letters WebURL maps (Chromium skips the check the URL Standard makes)",
            [
                "https://xn--/", "https://xn--.example/", "https://xn---/", "https://xn--a/", "https://xn--a.example/",
                "https://xn--zz-zzzzzzzzzzzz.example/", "https://xn--ls8h/", "https://xn--ls8h.la/",
                "https://xn--bcher-kva-/", "https://xn--abc-/", "https://xn--ab-cd/", "https://xn--ae-2ya.example/",
                "https://xn--80ak6aa92e.com/", "https://xn--mgbh0fb.example/", "https://xn--a-ecp.example/",
            ]
        ),
        (
            "non-ASCII host outside the letters WebURL maps exactly (compatibility forms, symbols, other scripts): not guessed",
            [
                "https://STRAẞE.example/", "https://ᄒᆞᆫ국.example/", "https://مثال.example/", "https://a.مثال/",
                "https://a1.مثال/", "https://עברית.example/", "https://İstanbul.example/", "https://ǅ.example/",
                "https://ﬁle.example/", "https://ℌ.example/", "https://ⓔⓥⓘⓛ.com/", "https://𝐞𝐯𝐢𝐥.com/",
                "https://℡.example/", "https://¼.example/", "https://ª.example/", "https://ſ.example/",
                "https://ǰ.example/", "https://ŉ.example/", "https://Ꭰ.example/", "https://ꭰ.example/",
                "https://ĳ.example/", "https://ŀ.example/", "https://ƒ.example/", "https://ǆ.example/",
                "https://ϐ.example/", "https://µ.example/", "https://ㅎ.example/", "https://😀.example/",
                "https://♥.example/", "https://evil.com∕app.example.com/", "https://evil.com⁄app.example.com/",
                "https://evil.com⑴/", "https://q\u{301}.example/",
            ]
        ),
        (
            "hyphen or ASCII punctuation where UTS #46 versions disagree, in a label with non-ASCII letters",
            [
                "https://-ü.example/", "https://ü-.example/", "https://ab--ü.example/", "https://ü_a.example/",
            ]
        ),
        (
            "IPv6 that Chromium reads leniently (percent-decoded, fullwidth, hex or zero-padded IPv4 tail); the standard fails it",
            [
                "http://[::ffff:0x7f.0.0.1]/", "http://[::ffff:01.2.3.4]/", "http://[::%31]/", "http://[%3A%3A1]/",
                "http://[::１]/",
            ]
        ),
    ]

    /// Inputs compared code point by code point: Swift's `==` would equate `ü` with `u` + U+0308.
    static func scalars(_ input: String) -> [Unicode.Scalar] { Array(input.unicodeScalars) }

    static var refusedInputs: Set<[Unicode.Scalar]> { Set(refusals.flatMap(\.inputs).map(scalars)) }

    static func listing(_ inputs: Set<[Unicode.Scalar]>) -> String {
        inputs.map { String(String.UnicodeScalarView($0)).debugDescription }.sorted().joined(separator: ", ")
    }

    @Test func tableIsRecordedFromChromium() throws {
        let table = try Self.table()
        #expect(!table.chromium.isEmpty)
        #expect(table.rows.count > 500)
        #expect(Set(table.rows.map { Self.scalars($0.input) }).count == table.rows.count, "inputs are unique")
    }

    @Test func whatChromiumFailsWebURLFails() throws {
        for row in try Self.table().rows where !row.isHTTP {
            let chromium = row.ok ? row.href ?? "" : "fails"
            #expect(WebURL(row.input) == nil, "Chromium: \(chromium); input \(row.input.debugDescription)")
        }
    }

    @Test func whatWebURLAcceptsItReadsAsChromiumDoes() throws {
        for row in try Self.table().rows {
            guard let url = WebURL(row.input) else { continue }
            let context = Comment(rawValue: "input \(row.input.debugDescription)")
            #expect(url.scheme + ":" == row.protocol, context)
            #expect(url.host == row.hostname, context)
            #expect(url.port.map(String.init) ?? "" == row.port, context)
            #expect(url.href == row.href, context)
        }
    }

    @Test func onlyTheListedRowsAreRefused() throws {
        let table = try Self.table()
        let refused = Set(table.rows.filter { $0.isHTTP && WebURL($0.input) == nil }.map { Self.scalars($0.input) })
        let unlisted = refused.subtracting(Self.refusedInputs)
        let stale = Self.refusedInputs.subtracting(refused)
        #expect(unlisted.isEmpty, "refused but not in `refusals`: \(Self.listing(unlisted))")
        #expect(stale.isEmpty, "in `refusals` but not a refused Chromium-accepted row: \(Self.listing(stale))")
        #expect(refused.count * 5 < table.rows.filter(\.isHTTP).count, "refusals stay a small share of the table")
    }

    @Test func hrefReadsBackAsItself() throws {
        for row in try Self.table().rows {
            guard let href = WebURL(row.input)?.href else { continue }
            #expect(WebURL(href)?.href == href, "input \(row.input.debugDescription)")
        }
    }

    @Test func backslashBeforeAtSignEndsTheHost() throws {
        let url = try #require(WebURL("https://evil.com\\@app.example.com/"))
        #expect(url.host == "evil.com")
        #expect(url.href == "https://evil.com/@app.example.com/")
        #expect(WebURL("https:\\\\evil.com\\@app.example.com")?.host == "evil.com")
        #expect(WebURL("https://evil.com\t\\@app.example.com/")?.host == "evil.com")
        #expect(WebURL("https://evil.com%5c@app.example.com/")?.host == "app.example.com", "an encoded backslash is userinfo")
    }

    @Test func userinfoEndsAtTheLastAtSign() {
        #expect(WebURL("https://app.example.com@evil.com/")?.host == "evil.com")
        let twoAtSigns = WebURL("https://app.example.com@evil.com@app.example.com/")
        #expect(twoAtSigns?.href == "https://app.example.com%40evil.com@app.example.com/")
        #expect(WebURL("https://evil.com#@app.example.com")?.host == "evil.com")
        #expect(WebURL("https://evil.com?@app.example.com")?.host == "evil.com")
    }

    @Test func hostsAreReadAsBrowsersReadThem() {
        #expect(WebURL("http://0x7f.1/")?.host == "127.0.0.1")
        #expect(WebURL("https://ＡＰＰ．example。com./")?.host == "app.example.com.")
        #expect(WebURL("https://bücher.example/")?.host == "xn--bcher-kva.example")
        #expect(WebURL("http://[0:0:0:0:0:ffff:127.0.0.1]:8080/")?.host == "[::ffff:7f00:1]")
        #expect(WebURL("https://app.example.com:0443/")?.port == nil)
        #expect(WebURL("https://app.example.com:8443/")?.port == 8443)
    }

    @Test func otherSchemesAndDoubtfulHostsAreRefused() {
        for input in [
            "javascript:alert(1)", "//evil.com", "/\\evil.com", "ftp://evil.com/", "https://ev\u{200B}il.com/",
            "https://xn--a.example/", "https://a b.com/", "https://evil.com:65536/", "https://ℯvil.com/",
        ] {
            #expect(WebURL(input) == nil, "\(input.debugDescription)")
        }
    }
}
