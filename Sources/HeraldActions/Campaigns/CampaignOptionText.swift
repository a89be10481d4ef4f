import Foundation
import HeraldCore

/// A campaign's settings as an operator writes them, in `herald campaigns create` and the console's form alike: one
/// spelling, one error line each.
public enum CampaignOptionText {
    /// `50/s`, `600/m`, `10000/h` → messages per second. `option` names the field in the error line.
    public static func rate(_ text: String, option: String = "--rate") throws -> Double {
        let parts = text.split(separator: "/")
        let unit: [Substring: Double] = ["s": 1, "m": 60, "h": 3600]
        guard parts.count == 2, let count = Double(parts[0]), count.isFinite, let seconds = unit[parts[1]],
            (1.0 / 86_400...1_000_000).contains(count / seconds)
        else {
            throw HeraldError(.argumentError, "\(option): expected N/s, N/m or N/h between 1/day and 1,000,000/s, got '\(text)'")
        }
        return count / seconds
    }

    /// ISO 8601, `now`, or `+<duration>`.
    public static func time(_ text: String) throws -> Date {
        if text == "now" { return Date() }
        if text.hasPrefix("+"), let seconds = DurationText.parse(String(text.dropFirst())) { return Date().addingTimeInterval(seconds) }
        if let date = try? Date(text, strategy: .iso8601), abs(date.timeIntervalSinceNow) < 10 * 366 * 86_400 { return date }
        throw HeraldError(.argumentError, "expected an ISO 8601 time (2026-11-22T10:00:00Z), now, or +10m; got '\(text)'")
    }

    /// A link lifetime such as `90m`, `48h` or `7d`, up to 366 days.
    public static func linkLifetime(_ text: String, option: String = "--link-lifetime") throws -> TimeInterval {
        guard let seconds = DurationText.parse(text), seconds > 0, seconds <= 366 * 86_400 else {
            throw HeraldError(.argumentError, "\(option): expected a duration up to 366d, such as 90m, 48h or 7d")
        }
        return seconds
    }
}
