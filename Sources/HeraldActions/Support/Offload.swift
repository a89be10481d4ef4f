import Dispatch

/// Runs blocking work (SQLite, password hashing, key generation) on a Dispatch thread, never on the
/// cooperative pool.
public func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try body() })
        }
    }
}
