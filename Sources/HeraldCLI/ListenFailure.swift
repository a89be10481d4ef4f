import Foundation
import HeraldCore
import NIOCore

/// Runs a service group that opens a listener, turning a failure to open it into one line that names the
/// configuration key, host and port: `server.port: cannot listen on 127.0.0.1:9099: the address is already in use…`
/// instead of `bind(descriptor:ptr:bytes:): Address already in use (errno: 98)`.
func listening<T>(_ key: String, host: String, port: Int, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as IOError {
        guard let reason = ListenFailure.reason(errno: error.errnoCode) else { throw error }
        throw HeraldError(.invalidConfiguration, "\(key): cannot listen on \(host):\(port): \(reason)")
    }
}

enum ListenFailure {
    /// What to tell the operator for the errors a listener's bind gives; nil for any other.
    static func reason(errno: CInt) -> String? {
        switch errno {
        case EADDRINUSE: "the address is already in use (another Herald, or another program, listens there; choose another port)"
        case EACCES: "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE; choose a port above 1023)"
        case EADDRNOTAVAIL: "no network interface of this machine has that address"
        default: nil
        }
    }
}
