import Foundation
import HeraldCore
import Testing

@Suite struct WebhookSignatureTests {
    /// The vector Python's `hmac.new(secret, b"<t>.<body>", hashlib.sha256).hexdigest()` gives: receivers in any language agree.
    @Test func signatureIsHMACSHA256OfTimestampDotBodyInHex() {
        let secret = "whsec-0123456789abcdef0123456789abcdef"
        let body = #"{"id":"e1","type":"sent"}"#
        let header = WebhookSignature.header(secret: secret, body: body, at: Date(timeIntervalSince1970: 1_764_145_920.7))
        #expect(header == "t=1764145920,v1=1e2facb80d2843bd44fa03fadbb8dffc2a9e9cf8ee07a0456b391ba8a1798aeb")
    }
}
