import Foundation
import HeraldCore
import HeraldStore

/// Reads accounts from CSV (header row) or JSON lines and creates them, row by row.
///
/// Columns / keys: `email` (required), `password`, `displayName` (or `display_name`), `emailVerified`
/// (or `email_verified`: true/false), `uid` (or `localId`), `disabled`. A bad row is reported with its
/// line number and never stops the good ones.
public enum AccountImporter {
    /// The rows of a Herald import file as users to import, by line number, and the lines already refused.
    static func rows(_ path: String) throws -> (users: [(position: Int, user: ImportedUser)], rejected: [AccountImportReport.Rejection]) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HeraldError(.argumentError, "cannot read \(path)")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw HeraldError(.argumentError, "\(path) is not valid UTF-8") }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        let isJSONLines = lines.first { !$0.trimmingCharacters(in: .whitespaces).isEmpty }?.hasPrefix("{") ?? false
        var users: [(position: Int, user: ImportedUser)] = []
        var rejected: [AccountImportReport.Rejection] = []
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
                users.append((number, try user(from: fields)))
            } catch let error as HeraldError {
                if header == nil && !isJSONLines { throw error }
                rejected.append(AccountImportReport.Rejection(position: number, reason: error.description))
            }
        }
        return (users, rejected)
    }

    /// A JSON-lines row: one JSON object; null values (and arrays or objects) are left out.
    static func jsonFields(_ line: Substring) throws -> [String: String] {
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(line.utf8)) else {
            throw HeraldError(.argumentError, "not a JSON object")
        }
        return object.compactMapValues(\.scalarText)
    }

    static func user(from fields: [String: String]) throws -> ImportedUser {
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
        return ImportedUser(
            localId: value("uid", "localId"), email: try EmailAddress(email).value,
            emailVerified: try flag("emailVerified", "email_verified"), rawPassword: password,
            displayName: try value("displayName", "display_name").map(DisplayName.validate), disabled: try flag("disabled"))
    }
}

/// What an import did: how many users it wrote, skipped (their uid was there already: a re-run) and refused.
public struct AccountImportReport: Sendable {
    /// A refused user: its line (Herald's formats) or its place in the file's users (a Firebase export), from 1.
    public struct Rejection: Sendable {
        public let position: Int
        public let reason: String
    }

    public var imported = 0
    public var skipped = 0
    public var rejected: [Rejection] = []
}

extension AccountsService {
    /// Imports a Firebase export's users (`herald accounts import --format firebase`) in batches of
    /// `accounts:batchCreate`'s size; `progress` hears how many users are done after each batch.
    ///
    /// - Throws: the hash errors of `ImportedPasswordHash.Scheme` when the parameters do not fit a user's hash.
    public func importFirebaseUsers(
        _ users: [ImportedUser], hash parameters: ImportedPasswordHash.Parameters, overwrite: Bool, progress: (Int) -> Void = { _ in }
    ) throws -> AccountImportReport {
        try requireAccountOwnership("herald accounts import")
        return try importAll(users.enumerated().map { ($0.offset + 1, $0.element) }, hash: parameters, overwrite: overwrite) {
            progress($0)
        }
    }

    /// Imports Herald's CSV or JSON lines, row by row (`herald accounts import`); passwords are hashed on every core.
    public func importAccounts(path: String, overwrite: Bool = false, progress: ((done: Int, total: Int)) -> Void = { _ in }) throws
        -> AccountImportReport
    {
        try requireAccountOwnership("herald accounts import")
        let (rows, refused) = try AccountImporter.rows(path)
        var report = try importAll(rows, hash: ImportedPasswordHash.Parameters(), overwrite: overwrite, herald: true) {
            progress(($0, rows.count))
        }
        report.rejected = (refused + report.rejected).sorted { $0.position < $1.position }
        return report
    }

    /// Imports users in batches: a repeated uid is refused at its later places; a user whose uid is taken already is
    /// skipped (a re-run), unless `overwrite`, and so is a row of Herald's formats without a uid whose email had an
    /// account before the import began. `herald` words conflicts as Herald's error codes, for Herald's formats.
    ///
    /// Everything that would refuse a whole batch (the hash parameters, missing or repeated uids) is settled before
    /// the first batch is written, so the import never stops halfway through the file.
    private func importAll(
        _ rows: [(position: Int, user: ImportedUser)], hash parameters: ImportedPasswordHash.Parameters, overwrite: Bool,
        herald: Bool = false, progress: (Int) -> Void
    ) throws -> AccountImportReport {
        if rows.contains(where: { $0.user.passwordHash != nil && $0.user.storedPasswordHash == nil }) {
            _ = try ImportedPasswordHash.Scheme(parameters)
        }
        var report = AccountImportReport()
        // Addresses that had accounts before this import: their uid-less rows were imported by an earlier run.
        let before = herald ? try store.standings(emails: rows.compactMap { $0.user.localId == nil ? $0.user.email : nil }) : [:]
        var seen: [String: Int] = [:]
        var unique: [(position: Int, user: ImportedUser)] = []
        for var row in rows {
            if herald && row.user.localId == nil {
                if let email = row.user.email, before[email.lowercased()] != nil {
                    report.skipped += 1
                    continue
                }
                row.user.localId = Account.newUID()
            }
            guard let uid = row.user.localId, !uid.isEmpty else {
                report.rejected.append(.init(position: row.position, reason: "localId is missing"))
                continue
            }
            if let first = seen[uid] {
                report.rejected.append(.init(position: row.position, reason: "DUPLICATE_LOCAL_ID : uid \(uid) is also at \(first)"))
                continue
            }
            seen[uid] = row.position
            unique.append(row)
        }
        // Plaintext passwords take ~30 ms each to hash: smaller batches keep the progress moving.
        let batchSize = unique.contains { $0.user.rawPassword != nil } ? 64 : Self.maximumImportBatch
        var done = rows.count - unique.count
        progress(done)
        for start in stride(from: 0, to: unique.count, by: batchSize) {
            let batch = Array(unique[start..<min(start + batchSize, unique.count)])
            let failures = try importUsers(batch.map(\.user), hash: parameters, options: UserImportOptions(allowOverwrite: overwrite))
            for failure in failures {
                let row = batch[failure.index]
                if failure.conflict == .uidExists {
                    report.skipped += 1
                    continue
                }
                var reason = failure.message
                if herald, let conflict = failure.conflict {
                    reason = conflict == .emailExists ? "EMAIL_EXISTS : another account has this email" : failure.message
                } else if !herald, let uid = row.user.localId {
                    reason = "localId \(uid): \(reason)"
                }
                report.rejected.append(.init(position: row.position, reason: reason))
            }
            report.imported += batch.count - failures.count
            done += batch.count
            progress(done)
        }
        return report
    }
}
