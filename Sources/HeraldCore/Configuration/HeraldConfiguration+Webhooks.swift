import Foundation

extension HeraldConfiguration {
    /// `webhooks.*`: endpoints told about what happens to mail, through the ledger's own outbox.
    public struct Webhooks: Sendable {
        /// One configured receiver (`webhooks.<name>.url`, `.secret`, `.events`).
        public struct Endpoint: Sendable, Hashable {
            public var name: String
            public var url: String
            /// The HMAC-SHA256 key of `Herald-Signature` (at least 32 characters; never logged or stored in the ledger).
            public var secret: String
            public var events: Set<WebhookEvent>

            public init(name: String, url: String, secret: String, events: Set<WebhookEvent> = Set(WebhookEvent.allCases)) {
                self.name = name
                self.url = url
                self.secret = secret
                self.events = events
            }
        }

        public var endpoints: [Endpoint] = []
        /// Seconds for one POST, connecting included.
        public var timeout: TimeInterval = 10
        /// POSTs of one delivery before it is `dead` (24 at the default backoff: about a day).
        public var maxAttempts = 24
        public var backoffBase: TimeInterval = 10
        public var backoffCap: TimeInterval = 3600

        public init() {}

        public func endpoint(named name: String) -> Endpoint? { endpoints.first { $0.name == name } }
    }
}
