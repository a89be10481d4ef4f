import Hummingbird

/// `/health`'s answer: `{"status":"ok"}`, or 503 `{"status":"failing","error":"<reason>"}`.
struct HealthReply: Encodable, Sendable {
    let status: String
    let error: String?

    init(_ health: Health) {
        let reason = health.failureReason
        status = reason == nil ? "ok" : "failing"
        error = reason
    }
}

extension Health {
    /// 200 while healthy, 503 once failed (load balancers stop sending traffic).
    var status: HTTPResponse.Status { failureReason == nil ? .ok : .serviceUnavailable }
}
