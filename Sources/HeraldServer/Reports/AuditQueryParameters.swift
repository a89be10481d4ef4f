import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// `GET /admin/audit`: the audit query from URL parameters, streamed as JSON lines.
enum AuditQueryParameters {
    /// `email`, `campaign`, `action`, `since`, `until` (ISO 8601), `status` (redeemed | unredeemed | expired).
    static func filter(_ values: [String: String]) throws -> AuditFilter {
        var filter = AuditFilter()
        filter.email = try values["email"].map { try EmailAddress($0) }
        filter.campaign = try values["campaign"].map { text in
            guard let id = Int64(text) else { throw HeraldError(.invalidArgument, "campaign must be a number") }
            return id
        }
        filter.kind = try values["action"].map { text in
            guard let kind = ActionKind(rawValue: text) ?? ActionKind(mode: text) else {
                throw HeraldError(.invalidArgument, "unknown action \(text)")
            }
            return kind
        }
        func time(_ name: String) throws -> Date? {
            try values[name].map { text in
                guard let date = try? Date(text, strategy: .iso8601) else { throw HeraldError(.invalidArgument, "\(name) must be ISO 8601") }
                return date
            }
        }
        filter.since = try time("since")
        filter.until = try time("until")
        filter.status = try values["status"].map { text in
            guard let status = AuditFilter.Status(rawValue: text) else {
                throw HeraldError(.invalidArgument, "status must be redeemed, unredeemed or expired")
            }
            return status
        }
        return filter
    }

    /// Streams rows as they are read: a producer thread feeds the response body in 32 KiB chunks and
    /// waits while 16 are unsent, so memory stays bounded however many rows match.
    static func stream(_ filter: AuditFilter, store: HeraldStore) -> Response {
        let (chunks, continuation) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(16))
        DispatchQueue.global().async {
            /// Waits while the client is behind; stops the scan when it has gone away.
            func send(_ text: String) throws {
                let chunk = ByteBuffer(string: text)
                while true {
                    switch continuation.yield(chunk) {
                    case .dropped: Thread.sleep(forTimeInterval: 0.005)
                    case .terminated: throw CancellationError()
                    default: return
                    }
                }
            }
            var pending = ""
            do {
                try store.audit(filter) { row in
                    pending += AuditFormatter.line(row, .jsonl) + "\n"
                    if pending.utf8.count > 32 * 1024 {
                        try send(pending)
                        pending = ""
                    }
                }
            } catch is CancellationError {
                return continuation.finish()
            } catch {
                pending += #"{"error":"audit query failed"}"# + "\n"
            }
            if !pending.isEmpty { try? send(pending) }
            continuation.finish()
        }
        return Response(
            status: .ok, headers: [.contentType: "application/x-ndjson", .cacheControl: "no-store"],
            body: ResponseBody(asyncSequence: chunks))
    }
}
