import Foundation

extension Date {
    /// `2026-11-22T07:32:00Z`: how the CLI, reports and the audit show times.
    public var iso8601: String { formatted(.iso8601) }
}
