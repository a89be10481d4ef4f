import Foundation
import HeraldCore

/// The console's action log: every change made in `/admin`, with who made it.
public protocol ConsoleActionLog: Sendable {
    /// Appends `action` (its `id` is ignored) and returns the id it got.
    @discardableResult
    func recordConsoleAction(_ action: ConsoleAction) throws -> Int64

    /// The actions `query` selects, newest first.
    func consoleActions(_ query: ConsoleActionQuery) throws -> [ConsoleAction]
}
