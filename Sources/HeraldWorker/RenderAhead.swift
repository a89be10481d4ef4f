import Dispatch
import Foundation
import HeraldCore
import HeraldMail
import HeraldStore

/// Renders and signs claimed rows ahead of the send loop, on every core: always when messages are DKIM-signed,
/// and for unsigned mail when the worker has fewer connections than cores.
///
/// An RSA signature costs more than the rest of a send (about 0.7 ms here); made on the send loop's one
/// thread, it held a signing worker to a fifth of its unsigned rate. A lane's rows are handed over as it takes
/// them from the desk and rendered in queue order beside the loop, which then only waits for a row that is
/// not ready yet. With one connection the loop waits on the server's replies between messages and rendering
/// there is on every message's path, so rendering ahead on an idle core made one connection 25–35 % faster
/// (20,000 messages, 2 cores); with as many connections as cores the cores are busy and the hand-off only
/// added CPU (3.24 s against 3.47 s at four connections, one run each), so unsigned mail is then rendered in the loop.
/// So it is beside the API (`herald serve`, `Worker.besideAPI`): a claim's forty renderings at once on every core
/// held up the requests' tasks, and a paced 2,000 `sendOobCode` a second had p99 7.27–8.23 ms rendering ahead against
/// 6.68–7.23 ms in the loop (three interleaved pairs).
/// `@unchecked Sendable`: the state is guarded by `condition`.
final class RenderAhead: @unchecked Sendable {
    typealias Rendered = Result<MessageComposer.Composed, HeraldError>

    private let render: @Sendable (ClaimedMessage) -> Rendered
    private let condition = NSCondition()
    /// Renderings under way or done, by the claim's code (unique per claim: a row handed back and claimed
    /// again has a new one, so a late rendering of the old claim is never sent).
    private var pending: Set<String> = []
    private var done: [String: Rendered] = [:]

    init(render: @escaping @Sendable (ClaimedMessage) -> Rendered) {
        self.render = render
    }

    /// Starts rendering `rows`, in order, on as many threads as there are cores.
    func submit(_ rows: [ClaimedMessage]) {
        guard !rows.isEmpty else { return }
        condition.withLock { for row in rows { pending.insert(row.code.plaintext) } }
        let render = render
        DispatchQueue.global().async { [self] in
            DispatchQueue.concurrentPerform(iterations: rows.count) { index in
                let key = rows[index].code.plaintext
                guard condition.withLock({ pending.contains(key) }) else { return }  // handed back meanwhile
                let rendered = render(rows[index])
                condition.withLock {
                    guard pending.contains(key) else { return }
                    done[key] = rendered
                    condition.broadcast()
                }
            }
        }
    }

    /// The row's rendering: waited for when it is under way, made here when it never was.
    func take(_ row: ClaimedMessage) -> Rendered {
        let key = row.code.plaintext
        condition.lock()
        guard pending.contains(key) else {
            condition.unlock()
            return render(row)
        }
        while done[key] == nil { condition.wait() }
        pending.remove(key)
        let rendered = done.removeValue(forKey: key)!
        condition.unlock()
        return rendered
    }

    /// Drops rows handed back unsent.
    func forget(_ rows: some Sequence<ClaimedMessage>) {
        condition.withLock {
            for row in rows {
                pending.remove(row.code.plaintext)
                done.removeValue(forKey: row.code.plaintext)
            }
        }
    }
}
