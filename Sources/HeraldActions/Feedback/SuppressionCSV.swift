import Foundation
import HeraldCore

/// The CSV form of the list: `email,reason,scope,detail,created_at`.
public enum SuppressionCSV {
    public static let header = "email,reason,scope,detail,created_at"

    /// One entry; a detail (a remote server's text) is kept to one line and never starts like a spreadsheet formula.
    public static func line(_ entry: Suppression) -> String {
        let detail = inert(entry.detail?.split(whereSeparator: \.isNewline).joined(separator: " ") ?? "")
        return [entry.email, entry.reason.rawValue, entry.scope.rawValue, detail, entry.createdAt.iso8601].map(CSVLine.quote)
            .joined(separator: ",")
    }

    /// `'=cmd…` for a cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR: OWASP's list).
    static func inert(_ cell: String) -> String {
        guard let first = cell.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) else { return cell }
        return "'" + cell
    }

    public typealias Entry = (email: String, reason: Suppression.Reason, scope: Suppression.Scope, detail: String?)

    /// The entries of a CSV text (addresses validated) and a line per problem (`line N: …`).
    public static func parse(_ text: String, defaultReason: Suppression.Reason) -> ([Entry], [String]) {
        let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated().map {
            ($0.offset + 1, String($0.element))
        }
        lines.removeAll { $0.1.trimmingCharacters(in: .whitespaces).isEmpty }
        guard let first = lines.first, let header = try? CSVLine.parse(first.1).map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }),
            let emailColumn = header.firstIndex(of: "email")
        else { return ([], ["line 1: the first line must be a CSV header with an 'email' column"]) }
        let reasonColumn = header.firstIndex(of: "reason")
        let scopeColumn = header.firstIndex(of: "scope")
        let detailColumn = header.firstIndex(of: "detail")
        var entries: [Entry] = []
        var problems: [String] = []
        for (number, line) in lines.dropFirst() {
            guard let cells = try? CSVLine.parse(line), cells.count == header.count else {
                problems.append("line \(number): expected \(header.count) columns")
                continue
            }
            guard let email = try? EmailAddress(cells[emailColumn].trimmingCharacters(in: .whitespaces)).value else {
                problems.append("line \(number): '\(cells[emailColumn])' is not an email address")
                continue
            }
            let reasonText = reasonColumn.map { cells[$0] } ?? ""
            guard let reason = reasonText.isEmpty ? defaultReason : Suppression.Reason(rawValue: reasonText) else {
                problems.append("line \(number): unknown reason '\(reasonText)'")
                continue
            }
            let scopeText = scopeColumn.map { cells[$0] } ?? ""
            guard let scope = scopeText.isEmpty ? reason.defaultScope : Suppression.Scope(rawValue: scopeText) else {
                problems.append("line \(number): unknown scope '\(scopeText)' (all or campaigns)")
                continue
            }
            let detail = detailColumn.map { cells[$0] }.flatMap { $0.isEmpty ? nil : $0 }
            entries.append((email, reason, scope, detail))
        }
        return (entries, problems)
    }
}
