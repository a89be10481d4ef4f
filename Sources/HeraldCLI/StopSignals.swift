import ServiceLifecycle
import Synchronization

#if canImport(Darwin)
    import Darwin
    import Dispatch
#else
    @preconcurrency import Dispatch
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #endif
#endif

/// Turns a SIGTERM or SIGINT that reaches `herald serve` or `herald worker` before its `ServiceGroup` listens
/// into a graceful shutdown of that group (exit 0), instead of death by the default disposition.
///
/// `catchEarly()` runs before the arguments are parsed and listens through Dispatch signal sources, the
/// mechanism of the group's own `UnixSignalsSequence`, so once the group runs both hear each signal; forwarding
/// one the group caught itself is harmless (a second graceful-shutdown request is ignored). A signal that
/// arrives before the process's first statement, while the dynamic loader still runs, is beyond any handler.
///
/// ```swift
/// StopSignals.catchEarly()           // first thing
/// …                                  // load the configuration, open the ledger
/// try await StopSignals.run(group)   // instead of group.run()
/// ```
enum StopSignals {
    private enum State {
        case waiting
        case requested
        case running(ServiceGroup)
    }

    private static let state = Mutex<State>(.waiting)
    private static let sources = Mutex<[any DispatchSourceSignal]>([])

    /// Starts listening for SIGTERM and SIGINT for the rest of the process.
    static func catchEarly() {
        let queue = DispatchQueue(label: "herald.stop-signals")
        sources.withLock { sources in
            for signal in [SIGTERM, SIGINT] { sources.append(listen(to: signal, on: queue)) }
        }
    }

    /// Whether a stop signal came before the group ran (start-up may give up waiting then).
    static var isRequested: Bool {
        state.withLock { current in
            if case .requested = current { return true }
            return false
        }
    }

    /// Runs `group`, shutting it down gracefully from the start if a stop signal came before.
    static func run(_ group: ServiceGroup) async throws {
        let stopRequested = state.withLock { current in
            defer { current = .running(group) }
            guard case .requested = current else { return false }
            return true
        }
        if stopRequested { await group.triggerGracefulShutdown() }
        try await group.run()
    }

    private static func listen(to signal: Int32, on queue: DispatchQueue) -> any DispatchSourceSignal {
        #if canImport(Darwin)
            Darwin.signal(signal, SIG_IGN)  // as UnixSignals does: kqueue reports ignored signals, the default kills first
        #endif
        let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
        source.setEventHandler { requestStop() }
        source.resume()
        return source
    }

    private static func requestStop() {
        let group: ServiceGroup? = state.withLock { current in
            guard case .running(let group) = current else {
                current = .requested
                return nil
            }
            return group
        }
        guard let group else { return }
        Task { await group.triggerGracefulShutdown() }
    }
}
