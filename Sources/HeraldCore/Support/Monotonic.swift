import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A point on the system's monotonic clock (`CLOCK_MONOTONIC`), for waits and ages measured inside one process:
/// a step of the wall clock either way (an NTP correction, an operator's `date -s`, a VM resumed) neither
/// lengthens nor shortens them. Wall-clock `Date`s stay for what is written to the ledger or shown to people.
///
/// ```swift
/// let deadline = MonotonicInstant.now().adding(0.5)
/// while MonotonicInstant.now() < deadline { … }
/// ```
public struct MonotonicInstant: Comparable, Hashable, Sendable {
    /// Nanoseconds since an arbitrary point (the boot, on Linux).
    public let nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func now() -> MonotonicInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicInstant(nanoseconds: UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec))
    }

    /// Earlier than any instant `now()` returns.
    public static let distantPast = MonotonicInstant(nanoseconds: 0)
    /// Later than any instant `now()` will return.
    public static let distantFuture = MonotonicInstant(nanoseconds: UInt64(Int64.max))

    /// This instant moved by `seconds` (either way), kept within `distantPast`…`distantFuture`.
    public func adding(_ seconds: TimeInterval) -> MonotonicInstant {
        guard seconds.isFinite else { return seconds > 0 ? .distantFuture : .distantPast }
        let delta = seconds * 1e9
        if delta >= 0 {
            let room = Double(Self.distantFuture.nanoseconds - min(nanoseconds, Self.distantFuture.nanoseconds))
            return MonotonicInstant(nanoseconds: delta >= room ? Self.distantFuture.nanoseconds : nanoseconds + UInt64(delta))
        }
        let back = -delta
        return MonotonicInstant(nanoseconds: back >= Double(nanoseconds) ? 0 : nanoseconds - UInt64(back))
    }

    /// Seconds from `earlier` to this instant (negative when `earlier` is later).
    public func seconds(since earlier: MonotonicInstant) -> TimeInterval {
        nanoseconds >= earlier.nanoseconds
            ? Double(nanoseconds - earlier.nanoseconds) / 1e9 : -Double(earlier.nanoseconds - nanoseconds) / 1e9
    }

    /// Seconds from now until this instant (negative once it has passed).
    public var secondsFromNow: TimeInterval { seconds(since: .now()) }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}

/// A lock with a condition whose timed waits run on the monotonic clock, unlike `NSCondition`'s (the wall clock,
/// where a backward step of ten minutes makes a 0.2 s wait last ten minutes).
///
/// `@unchecked Sendable`: the pthread mutex and condition variable are made for use across threads; their
/// storage is allocated once and never moves.
public final class MonotonicCondition: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }

    public func unlock() { pthread_mutex_unlock(mutex) }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits (holding the lock on return) until signalled.
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits (holding the lock on return) until signalled or `deadline`; false once the deadline has passed.
    @discardableResult
    public func wait(until deadline: MonotonicInstant) -> Bool {
        guard deadline > .now() else { return false }
        var time = timespec(
            tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &time) == 0
    }

    /// Waits (holding the lock on return) at most `seconds`; false when the time ran out.
    @discardableResult
    public func wait(seconds: TimeInterval) -> Bool { wait(until: .now().adding(max(0, seconds))) }

    public func signal() { pthread_cond_signal(condition) }

    public func broadcast() { pthread_cond_broadcast(condition) }
}
