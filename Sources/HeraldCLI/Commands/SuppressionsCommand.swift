import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore

/// `herald suppressions`: the addresses Herald no longer mails.
struct SuppressionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "suppressions",
        abstract: "List, add, remove, import or export the addresses Herald no longer mails.",
        discussion: """
            Hard bounces, complaints and repeated soft bounces (bounces.softLimit within bounces.softWindow) add \
            addresses that stop all mail; a one-click unsubscribe stops campaign mail only, so password resets and \
            sign-in links still go. The CSV form (export, import) is email,reason,scope,detail,created_at.
            """,
        subcommands: [ListSuppressions.self, AddSuppressions.self, RemoveSuppressions.self, ImportSuppressions.self, ExportSuppressions.self])
}

extension Suppression.Reason: ExpressibleByArgument {}
extension Suppression.Scope: ExpressibleByArgument {}

/// `herald suppressions list`: one line per address.
struct ListSuppressions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Print the suppressed addresses.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "Only this reason (hard-bounce, soft-bounce, complaint, unsubscribe, manual).") var reason: Suppression.Reason?
    @Option(help: "At most this many.") var limit = 1000
    @OptionGroup var output: OutputOptions

    static let columns: [RowWriter.Column] = [
        .init("CREATED", key: "createdAt"), .init("REASON", key: "reason"), .init("SCOPE", key: "scope"), .init("EMAIL", key: "email"),
        .init("DETAIL", key: "detail"),
    ]

    func run() async throws {
        try await reportingErrors {
            let format = try output.resolved()
            let feedback = try await Runtime.load(global).actions().feedback
            let entries = try feedback.suppressions(reason: reason, limit: limit)
            let writer = RowWriter(format: format, columns: Self.columns)
            for entry in entries {
                let cells = [entry.createdAt.iso8601, entry.reason.rawValue, entry.scope.rawValue, entry.email, entry.detail ?? ""]
                try writer.write(cells, json: entry)
            }
            writer.finish(empty: "(no suppressed addresses)")
        }
    }
}

/// `herald suppressions add`: by hand (an address the operator knows is dead, or asked to be left alone).
struct AddSuppressions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Suppress addresses.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The addresses.") var emails: [String]
    @Option(help: "Why (manual, hard-bounce, soft-bounce, complaint, unsubscribe).") var reason = Suppression.Reason.manual
    @Option(help: "Which mail it stops: all, or campaigns (default: campaigns for unsubscribe, else all).")
    var scope: Suppression.Scope?
    @Option(help: "A note kept with the entry.") var detail: String?

    func run() async throws {
        try await reportingErrors {
            guard !emails.isEmpty else { throw HeraldError(.argumentError, "name at least one address") }
            let feedback = try await Runtime.load(global).actions().feedback
            let changed = try feedback.suppress(emails: emails, reason: reason, scope: scope, detail: detail)
            print("suppressed \(changed) address(es); \(emails.count - changed) already were")
        }
    }
}

/// `herald suppressions remove`: mail the address again.
struct RemoveSuppressions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Take addresses off the list.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The addresses.") var emails: [String]

    func run() async throws {
        try await reportingErrors {
            guard !emails.isEmpty else { throw HeraldError(.argumentError, "name at least one address") }
            let feedback = try await Runtime.load(global).actions().feedback
            var missing: [String] = []
            for email in emails where !(try feedback.unsuppress(email: email)) { missing.append(email) }
            guard missing.isEmpty else {
                let removed = emails.count - missing.count
                let also = removed > 0 ? " (removed the other \(removed))" : ""
                throw HeraldError(.notFound, "not on the suppression list: \(missing.joined(separator: ", "))\(also)")
            }
            print("removed \(emails.count) address(es)")
        }
    }
}

/// `herald suppressions export`: the whole list as CSV, for another system or a backup.
struct ExportSuppressions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "export", abstract: "Write the list as CSV to standard output.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors {
            let feedback = try await Runtime.load(global).actions().feedback
            print(SuppressionCSV.header)
            var after: String?
            while true {
                let page = try feedback.suppressions(after: after, limit: 10_000)
                for entry in page { print(SuppressionCSV.line(entry)) }
                guard page.count == 10_000, let last = page.last else { break }
                after = last.email
            }
        }
    }
}

/// `herald suppressions import FILE`: a CSV with an `email` column, and optionally reason, scope, detail.
struct ImportSuppressions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Add the addresses of a CSV file (email column; reason, scope, detail optional; export's format).",
        discussion: "Lines that cannot be read are listed with their line number and the command exits 1; the others are added.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The CSV file (- for standard input).") var file: String
    @Option(help: "The reason for lines without one.") var reason = Suppression.Reason.manual

    func run() async throws {
        try await reportingErrors {
            let feedback = try await Runtime.load(global).actions().feedback
            let text = try Self.read(file)
            let (entries, problems) = SuppressionCSV.parse(text, defaultReason: reason)
            let added = try feedback.suppress(entries)
            print("imported \(entries.count) line(s): \(added) added, \(entries.count - added) already suppressed")
            guard problems.isEmpty else {
                for problem in problems.prefix(100) { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
                let line = "error: \(problems.count) line(s) of \(file) were not imported (listed above)\n"
                FileHandle.standardError.write(Data(line.utf8))
                throw ExitCode.failure  // some rows rejected: 1, not a usage error
            }
        }
    }

    static func read(_ file: String) throws -> String {
        let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: file)
        guard let data else { throw HeraldError(.argumentError, "cannot read \(file)") }
        guard let text = String(data: data, encoding: .utf8) else { throw HeraldError(.argumentError, "\(file) is not UTF-8 text") }
        return text
    }
}
