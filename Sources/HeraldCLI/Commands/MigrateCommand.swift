import ArgumentParser

/// `herald migrate`: creates or upgrades the ledger.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "migrate", abstract: "Create or upgrade the SQLite ledger.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            _ = try runtime.openStore()
            print("database \(runtime.configuration.database.path) is up to date")
        }
    }
}
