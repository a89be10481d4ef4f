import Hummingbird

/// `/health`'s answer: `{"status":"ok"}`; 503 `{"status":"unavailable","error":"<reason>"}` while the
/// ledger cannot commit (it recovers by itself); 503 `{"status":"failing","error":"<reason>"}` once the
/// process can no longer do its job (load balancers stop sending it traffic). While the SMTP relay fails the
/// embedded worker, `relay` says why beside whatever status (`{"status":"ok","relay":"TLS failed: …"}`).
struct HealthReply: Encodable, Sendable {
    let status: String
    let error: String?
    /// Why the SMTP relay fails the worker, while it does: `"relay": "TLS failed: … (since 2026-11-28T12:03:00Z)"`.
    /// Mail waits in the ledger meanwhile and the API still queues it, so the status stays as it is.
    let relay: String?

    init(_ health: Health) {
        relay = health.relayProblem
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
