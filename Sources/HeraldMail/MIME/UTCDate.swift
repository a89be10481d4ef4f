import Foundation

/// UTC renderings of a date for headers and templates, without a (non-Sendable) formatter.
enum UTCDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 22 Nov 2026 07:32:00 +0000`: the RFC 5322 `Date:` header form.
    static func rfc5322(_ date: Date) -> String {
        let parts = components(date)
        return "\(days[Int(parts.tm_wday)]), \(parts.tm_mday) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) +0000"
    }

    /// `2026-11-22 07:32 UTC`: the request time shown in sign-in subjects.
    static func minutes(_ date: Date) -> String {
        let parts = components(date)
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min)) UTC"
    }

    private static func components(_ date: Date) -> tm {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return parts
    }

    private static func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
