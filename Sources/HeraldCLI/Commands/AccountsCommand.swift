import ArgumentParser
import Foundation
import HeraldActions

/// `herald accounts …`: the account store behind the Identity Toolkit API.
struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts", abstract: "Import and list accounts.", subcommands: [ImportAccounts.self, ListAccounts.self])
}

/// `herald accounts import FILE`: CSV (header row) or JSON lines; bad rows are reported by line and skipped.
struct ImportAccounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import accounts from CSV or JSON lines (email, password, displayName, emailVerified, uid, disabled).",
        discussion: "Good rows are imported even when others are rejected; each rejected row is printed with its line number and the exit code is 1.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "A .csv file with a header row, or a file of JSON objects, one per line.") var file: String

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            let report = try runtime.actions().accounts.importAccounts(path: file)
            for (line, reason) in report.rejected {
                FileHandle.standardError.write(Data("\(file):\(line): \(reason)\n".utf8))
            }
            print("imported \(report.imported) account(s), rejected \(report.rejected.count)")
            if !report.rejected.isEmpty { throw ExitCode.failure }
        }
    }
}

/// `herald accounts list`.
struct ListAccounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List accounts.")

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print a JSON array.") var json = false

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            let accounts = try runtime.actions().accounts.listAccounts()
            if json {
                print(try prettyJSON(accounts.map(AccountJSON.init)))
                return
            }
            for account in accounts {
                print(
                    "\(account.uid)  \(account.email ?? "-")  verified=\(account.emailVerified)  password=\(account.passwordHash != nil)  disabled=\(account.disabled)  \(account.displayName ?? "")"
                )
            }
            print("\(accounts.count) account(s)")
        }
    }
}
