import Foundation
import HeraldActions
import HeraldCore
import Hummingbird
import Logging

/// The audit as a streamed JSON-lines or CSV response, in bounded memory however many rows match.
enum AuditStream {
    /// A producer thread reads rows and feeds the body in 32 KiB chunks, waiting while 16 are unsent;
    /// it stops the scan when the client has gone away. CSV comes as a download, with its header line.
    static func response(_ filter: AuditFilter, format: AuditFormatter.Format = .jsonl, reports: ReportsService, logger: Logger) -> Response {
        let (chunks, continuation) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(16))
        DispatchQueue.global().async {
            /// Waits while the client is behind; throws when it has gone away.
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
            var pending = AuditFormatter.header(format).map { $0 + "\n" } ?? ""
            do {
                try reports.audit(filter) { row in
                    pending += AuditFormatter.line(row, format) + "\n"
                    if pending.utf8.count > 32 * 1024 {
                        try send(pending)
                        pending = ""
                    }
                }
            } catch is CancellationError {
                return continuation.finish()
            } catch {
                logger.error("audit query failed", metadata: ["error": "\(error)"])
                pending += (format == .csv ? "# audit query failed" : #"{"error":"audit query failed"}"#) + "\n"
            }
            if !pending.isEmpty { try? send(pending) }
            continuation.finish()
        }
        let headers: HTTPFields =
            format == .csv
            ? [
                .contentType: "text/csv; charset=utf-8", .cacheControl: "no-store",
                .contentDisposition: #"attachment; filename="herald-audit.csv""#,
            ]
            : [.contentType: "application/x-ndjson", .cacheControl: "no-store"]
        return Response(status: .ok, headers: headers, body: ResponseBody(asyncSequence: chunks))
    }
}
