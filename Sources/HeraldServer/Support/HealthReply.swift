import Hummingbird

/// `/health`'s answer: `{"status":"ok"}`; 503 `{"status":"unavailable","error":"<reason>"}` while the
/// ledger cannot commit (it recovers by itself); 503 `{"status":"failing","error":"<reason>"}` once the
/// process can no longer do its job (load balancers stop sending it traffic).
struct HealthReply: Encodable, Sendable {
    let status: String
    let error: String?

    init(_ health: Health) {
        if let failure = health.failureReason {
            status = "failing"
            error = failure
        } else if let waiting = health.unavailableReason {
            status = "unavailable"
            error = waiting
        } else {
            status = "ok"
            error = nil
        }
    }

    var httpStatus: HTTPResponse.Status { error == nil ? .ok : .serviceUnavailable }
}
