import Foundation

/// Parses durations written as `250ms`, `90s`, `15m`, `6h`, `3d` (or a bare number of seconds).
public enum DurationText {
    public static func parse(_ text: String) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            let number = trimmed.dropLast(suffix.count)
            if let value = Double(number), value >= 0, value.isFinite { return value * factor }
        }
        if let value = Double(trimmed), value >= 0, value.isFinite { return value }
        return nil
    }

    /// A compact rendering for logs and templates: `90s`, `15m`, `6h`, `3d`.
    public static func format(_ seconds: TimeInterval) -> String {
        if seconds >= 86400, seconds.truncatingRemainder(dividingBy: 86400) == 0 { return "\(Int(seconds / 86400))d" }
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600))h" }
        if seconds >= 60, seconds.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(seconds / 60))m" }
        return "\(seconds.formatted(.number.precision(.fractionLength(0...3))))s"
    }
}
