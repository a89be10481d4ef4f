import Foundation
import GRDB
import HeraldCore

/// A bulk campaign: one action sent to many recipients at a controlled rate.
public struct Campaign: Sendable, Hashable {
    /// Whether the worker may send the campaign's rows.
    public enum State: String, Sendable, CaseIterable { case active, paused, cancelled }

    public let id: Int64
    public let name: String
    public let kind: ActionKind
    public let state: State
    public let settings: ActionCodeSettings
    /// Messages per second; nil means as fast as the worker goes.
    public let rate: Double?
    public let startAt: Date
    public let linkLifetime: TimeInterval?
    public let rejected: Int
    public let createdAt: Date

    /// `active`, `paused`, `cancelled`, or `done` once an active campaign has nothing left to send.
    public func status(counts: [OutboxState: Int]) -> String {
        let pending = counts.filter { $0.key.isPending }.values.reduce(0, +)
        return state == .active && pending == 0 && !counts.isEmpty ? "done" : state.rawValue
    }

    init(row: Row) throws {
        guard let kind = ActionKind(rawValue: row["action"]), let state = State(rawValue: row["state"]) else {
            throw HeraldError(.notFound, "campaign \(row["id"] as Int64) has an unknown action or state")
        }
        id = row["id"]
        name = row["name"]
        self.kind = kind
        self.state = state
        settings = try JSONDecoder().decode(ActionCodeSettings.self, from: Data((row["settings"] as String).utf8))
        rate = row["rate"]
        startAt = Date(milliseconds: row["start_at"])
        linkLifetime = row["link_lifetime"]
        rejected = row["rejected"]
        createdAt = Date(milliseconds: row["created_at"])
    }
}
