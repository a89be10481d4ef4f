import Hummingbird

/// `/health`'s answer: `{"status":"ok"}`, or 503 `{"status":"failing","error":"<reason>"}` once the process
/// can no longer do its job (load balancers stop sending it traffic).
struct HealthReply: Encodable, Sendable {
    let status: String
    let error: String?

    init(_ health: Health) {
        let reason = health.failureReason
        status = reason == nil ? "ok" : "failing"
        error = reason
    }

    var httpStatus: HTTPResponse.Status { error == nil ? .ok : .serviceUnavailable }
}
