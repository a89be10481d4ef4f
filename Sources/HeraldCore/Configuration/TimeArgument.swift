import Foundation

/// The times `--since` and `--until` take everywhere: an ISO 8601 time, `now`, or a duration meaning that long ago
/// (`90s`, `10m`, `1h`, `2d`). A time in the future is refused: nothing in the ledger has happened yet.
public enum TimeArgument {
    public static func past(_ text: String, option: String, now: Date = Date()) throws -> Date {
        let date: Date
        if text == "now" {
            date = now
        } else if text.hasPrefix("+"), let seconds = DurationText.parse(String(text.dropFirst())) {
            date = now.addingTimeInterval(seconds)  // `+10m`, as `--start-at` takes it: refused below
        } else if let last = text.last, "smhd".contains(last), text.first?.isNumber == true,
            let seconds = DurationText.parse(text)
        {
            date = now.addingTimeInterval(-seconds)
        } else if let parsed = try? Date(text, strategy: .iso8601) {
            date = parsed
        } else {
            throw HeraldError(
                .argumentError, "\(option): expected an ISO 8601 time (2026-11-22T10:00:00Z), now, or how long ago (90s, 10m, 1h, 2d); got '\(text)'")
        }
        guard date <= now.addingTimeInterval(1) else {
            throw HeraldError(.argumentError, "\(option): \(text) is in the future; give a past time, or how long ago (1h, 2d)")
        }
        return date
    }
}
