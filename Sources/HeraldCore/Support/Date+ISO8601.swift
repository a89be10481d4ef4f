import Foundation

extension Date {
    /// `2026-11-22T07:32:00Z`: how the CLI, reports and the audit show times.
    public var iso8601: String { formatted(.iso8601) }
}

extension Date {
    /// Reads back what `iso8601` writes; nil for anything else.
    public init?(iso8601 text: String) {
        guard let date = try? Date(text, strategy: .iso8601) else { return nil }
        self = date
    }
}
