import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore

/// `herald keys`: the RSA keys that sign ID tokens (`tokens.keyFile`).
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "List or rotate the keys that sign ID tokens.", subcommands: [ListKeys.self, RotateKeys.self])
}

/// `herald keys list`: one line per key, the signing key last.
struct ListKeys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Print each key's id, creation time and state (creates the file if absent).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions

    static let columns: [RowWriter.Column] = [.init("KID", key: "kid"), .init("CREATED", key: "createdAt"), .init("STATE", key: "state")]

    /// One key in `--format json|jsonl`: never the key itself.
    struct Row: Encodable {
        let kid: String
        let createdAt: String
        let state: String
    }

    func run() async throws {
        try await reportingErrors {
            let format = try output.resolved()
            let runtime = try await Runtime.load(global)
            let file = try SigningKeyFile.openOrCreate(path: runtime.configuration.signingKeyPath)
            let live = Set(file.liveKeys().map(\.kid))
            let writer = RowWriter(format: format, columns: Self.columns)
            for key in file.keys {
                let state = key.retiredAt == nil ? "signing" : live.contains(key.kid) ? "verifying" : "expired"
                let row = Row(kid: key.kid, createdAt: key.createdAt.iso8601, state: state)
                try writer.write([row.kid, row.createdAt, row.state], json: row)
            }
            writer.finish()
        }
    }
}

/// `herald keys rotate`: a new key signs from the next start of `herald serve`; old ones keep verifying
/// until their tokens have expired.
struct RotateKeys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Add a new signing key; restart `herald serve` to sign with it. Earlier keys verify for another 25 hours.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            var file = try SigningKeyFile.openOrCreate(path: runtime.configuration.signingKeyPath)
            let key = try file.rotate()
            print("new signing key \(key.kid) in \(file.path); restart herald serve to use it")
        }
    }
}
