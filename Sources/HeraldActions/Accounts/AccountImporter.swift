import Foundation
import HeraldCore
import HeraldStore

/// Reads accounts from CSV (header row) or JSON lines and creates them, row by row.
///
/// Columns / keys: `email` (required), `password`, `displayName` (or `display_name`), `emailVerified`
/// (or `email_verified`: true/false), `uid` (or `localId`), `disabled`. A bad row is reported with its
/// line number and never stops the good ones.
public enum AccountImporter {
    public struct Report: Sendable {
        public var imported = 0
        public var rejected: [(line: Int, reason: String)] = []
    }

    static func importFile(_ path: String, into store: any HeraldStore) throws -> Report {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HeraldError(.argumentError, "cannot read \(path)")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw HeraldError(.argumentError, "\(path) is not valid UTF-8") }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        let isJSONLines = lines.first { !$0.trimmingCharacters(in: .whitespaces).isEmpty }?.hasPrefix("{") ?? false
        var report = Report()
        var header: [String]?
        for (index, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let number = index + 1
            do {
                let fields: [String: String]
                if isJSONLines {
                    fields = try jsonFields(line)
                } else {
                    let cells = try CSVLine.parse(String(line))
                    guard let names = header else {
                        header = cells.map { $0.trimmingCharacters(in: .whitespaces) }
                        guard header!.contains("email") else { throw HeraldError(.argumentError, "the header has no 'email' column") }
                        continue
                    }
                    guard cells.count == names.count else {
                        throw HeraldError(.argumentError, "expected \(names.count) columns, found \(cells.count)")
                    }
                    fields = Dictionary(zip(names, cells), uniquingKeysWith: { first, _ in first })
                }
                try store.createAccount(account(from: fields))
                report.imported += 1
            } catch let error as HeraldError {
                if header == nil && !isJSONLines { throw error }
                report.rejected.append((number, error.description))
            }
        }
        return report
    }

    /// A JSON-lines row: one JSON object; null values (and arrays or objects) are left out.
    static func jsonFields(_ line: Substring) throws -> [String: String] {
        guard let object = try? JSONDecoder().decode([String: JSONScalar].self, from: Data(line.utf8)) else {
            throw HeraldError(.argumentError, "not a JSON object")
        }
        return object.compactMapValues(\.text)
    }

    static func account(from fields: [String: String]) throws -> Account {
        func value(_ names: String...) -> String? { names.lazy.compactMap { fields[$0] }.first { !$0.isEmpty } }
        func flag(_ names: String...) throws -> Bool {
            guard let text = names.lazy.compactMap({ fields[$0] }).first(where: { !$0.isEmpty }) else { return false }
            switch text.lowercased() {
            case "true", "1", "yes": return true
            case "false", "0", "no": return false
            default: throw HeraldError(.argumentError, "\(names[0]) must be true or false, got '\(text)'")
            }
        }
        guard let email = value("email") else { throw HeraldError(.missingEmail, "") }
        let password = value("password")
        if let password { try PasswordHasher.checkStrength(password) }
        let now = Date()
        return Account(
            uid: value("uid", "localId") ?? Account.newUID(),
            email: try EmailAddress(email).value, emailVerified: try flag("emailVerified", "email_verified"),
            passwordHash: try password.map(PasswordHasher.hash),
            displayName: try value("displayName", "display_name").map(DisplayName.validate), disabled: try flag("disabled"),
            validSince: now.milliseconds - 1000, createdAt: now, providers: password == nil ? [] : ["password"])
    }
}
