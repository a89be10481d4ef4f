import CThreadName
import Foundation

extension Thread {
    /// A thread called `name` by Foundation and by the kernel, which runs `body` once started.
    ///
    /// The kernel's name is what `top -H`, `ps -L` and `perf` show, so they tell the committer, the ledger desk and the
    /// SMTP lanes apart. On Linux, Foundation's `Thread.name` does not reach the kernel: every such thread showed the
    /// name of the Dispatch thread that started it. The kernel keeps 15 bytes.
    public static func named(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        let thread = Thread {
            herald_set_thread_name(name)
            body()
        }
        thread.name = name
        return thread
    }
}
