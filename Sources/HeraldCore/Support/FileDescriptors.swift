import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether this process has run out of file descriptors, which SQLite reports as "unable to open database file"
/// and a connection attempt as a refused or failed connection: errors that name the wrong culprit.
public enum FileDescriptors {
    /// What to tell the operator when `exhausted()`.
    public static let exhaustion =
        "this process is out of file descriptors (EMFILE): raise its open-file limit (ulimit -n, systemd LimitNOFILE)"

    /// True when the process cannot open one more file (EMFILE, or the system's table full: ENFILE).
    public static func exhausted() -> Bool {
        let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
        if descriptor >= 0 {
            close(descriptor)
            return false
        }
        return errno == EMFILE || errno == ENFILE
    }
}
