import CThreadName

/// The kernel's name for Herald's own threads.
public enum ThreadName {
    /// Names the calling thread for the kernel, so `top -H`, `ps -L` and `perf` tell the committer, the ledger desk and
    /// the SMTP lanes apart. On Linux, Foundation's `Thread.name` does not reach the kernel: every such thread showed
    /// the name of the Dispatch thread that started it. The kernel keeps 15 bytes. Call it first thing in the thread's
    /// body, with the name given to `Thread.name`.
    public static func apply(_ name: String) {
        herald_set_thread_name(name)
    }
}
