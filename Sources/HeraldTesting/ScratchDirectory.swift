import Foundation

/// Test support shared by the test targets: a directory of its own under the system's temporary directory, removed with its last reference.
///
/// Keep it as a stored property of the suite, which lives until the test returns, so nothing is
/// removed while a store still uses it.
public final class ScratchDirectory: Sendable {
    public let url: URL

    /// Creates the directory; a failure to do so surfaces when the first file is opened in it.
    public init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}
