import Foundation
import HeraldCore

/// Several SMTP connections ("lanes", `0..<lanes`) driven from one thread: a send starts without
/// blocking, and `poll` reports sends as they finish.
///
/// The worker's send loop runs on one thread over a dispatcher: `CurlSMTPDispatcher` in production;
/// `ThreadedDispatcher` gives any blocking `MailTransport` (the tests' scripted servers) this shape.
///
/// Only `waker` may be used from other threads.
public protocol MailDispatcher: AnyObject {
    /// How many connections.
    var lanes: Int { get }

    /// How many sends a lane holds at once (1 by default): a pipelining dispatcher takes a lane's next message
    /// while the one before is under way. A lane's sends finish in the order they started.
    var depth: Int { get }

    /// Begins sending on a lane that holds fewer than `depth` sends.
    func start(lane: Int, from sender: String, to recipients: [String], message: [UInt8])

    /// Drives the sends in progress until at least one finishes, `timeout` passes or the waker is
    /// called; returns the sends that finished, each lane's in the order they started.
    func poll(timeout: TimeInterval) -> [(lane: Int, result: DeliveryResult)]

    /// Makes a `poll` in progress (or the next one) return at once; safe from any thread.
    var waker: @Sendable () -> Void { get }

    /// How many connections the lanes have opened so far.
    var connectionsOpened: Int { get }

    /// Ends every connection; call once no send is in progress.
    func close()
}

extension MailDispatcher {
    public var depth: Int { 1 }
}

/// A dispatcher over blocking transports: each lane's transport sends on its own thread.
///
/// Each lane thread sleeps on its own semaphore, so starting a send wakes that thread alone; only the
/// send loop waits on `condition`, for results. `@unchecked Sendable`: the transports are touched only
/// by their lane's thread; everything else is guarded by `condition`'s lock.
public final class ThreadedDispatcher: MailDispatcher, @unchecked Sendable {
    private struct Job {
        let sender: String
        let recipients: [String]
        let message: [UInt8]
    }

    private let transports: [any MailTransport]
    private let condition = MonotonicCondition()
    private let signals: [DispatchSemaphore]
    private var jobs: [Job?]
    private var finished: [(lane: Int, result: DeliveryResult)] = []
    private var woken = false
    private var closing = false
    private var opened: [Int]
    private var threadsLeft: Int
    public let lanes: Int

    public init(_ transports: [any MailTransport]) {
        self.transports = transports
        lanes = transports.count
        signals = transports.map { _ in DispatchSemaphore(value: 0) }
        jobs = Array(repeating: nil, count: transports.count)
        opened = Array(repeating: 0, count: transports.count)
        threadsLeft = transports.count
        for lane in transports.indices {
            let thread = Thread.named("herald-smtp-\(lane)") { [self] in
                run(lane)
            }
            thread.start()
        }
    }

    private func run(_ lane: Int) {
        let transport = transports[lane]
        while true {
            signals[lane].wait()
            condition.lock()
            guard let job = jobs[lane] else {
                let done = closing
                condition.unlock()
                if done { break } else { continue }
            }
            condition.unlock()
            let result = transport.send(from: job.sender, to: job.recipients, message: job.message)
            let count = transport.connectionsOpened
            condition.lock()
            jobs[lane] = nil
            opened[lane] = count
            finished.append((lane, result))
            condition.broadcast()
            condition.unlock()
        }
        condition.lock()
        threadsLeft -= 1
        condition.broadcast()
        condition.unlock()
    }

    public func start(lane: Int, from sender: String, to recipients: [String], message: [UInt8]) {
        condition.lock()
        precondition(jobs[lane] == nil && !closing, "lane \(lane) is already sending, or closed")
        jobs[lane] = Job(sender: sender, recipients: recipients, message: message)
        condition.unlock()
        signals[lane].signal()
    }

    public func poll(timeout: TimeInterval) -> [(lane: Int, result: DeliveryResult)] {
        condition.lock()
        defer { condition.unlock() }
        let deadline = MonotonicInstant.now().adding(max(0, timeout))
        while finished.isEmpty && !woken && condition.wait(until: deadline) {}
        woken = false
        let done = finished
        finished = []
        return done
    }

    public var waker: @Sendable () -> Void {
        { [self] in
            condition.lock()
            woken = true
            condition.broadcast()
            condition.unlock()
        }
    }

    public var connectionsOpened: Int { condition.withLock { opened.reduce(0, +) } }

    /// Lets every lane finish its send in progress, then ends the lane threads (and their connections).
    public func close() {
        condition.lock()
        guard !closing else {
            condition.unlock()
            return
        }
        closing = true
        condition.unlock()
        for signal in signals { signal.signal() }
        condition.lock()
        while threadsLeft > 0 { condition.wait() }
        condition.unlock()
    }
}
