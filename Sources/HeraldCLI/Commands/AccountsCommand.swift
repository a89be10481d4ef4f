import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore

/// `herald accounts …`: the account store behind the Identity Toolkit API.
struct AccountsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accounts", abstract: "Import, export and list accounts.",
        subcommands: [ImportAccounts.self, ExportAccounts.self, ListAccounts.self])
}

/// `herald accounts import FILE`: a Firebase export (`firebase auth:export`, JSON or CSV) with its password hashes,
/// or Herald's own CSV (header row) / JSON lines with plaintext passwords.
struct ImportAccounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import accounts: a Firebase export with its password hashes, or CSV / JSON lines.",
        discussion: """
            A Firebase export (`firebase auth:export users.json` or `.csv`) keeps each user's password: give the \
            project's password hash parameters from the Firebase console with --hash-config (or --hash-algo and \
            its options, as `firebase auth:import` takes them). Users sign in with their old passwords; Herald \
            replaces each imported hash with its own at the user's first sign-in. A Herald export carries its hash \
            parameters itself.

            Herald's own format is CSV with a header row, or JSON lines: email (required), password, displayName, \
            emailVerified, uid, disabled. Plaintext passwords are hashed on every core.

            Good users are imported even when others are rejected; each rejected one is printed with its line or \
            index, and the exit code is 1. A re-run skips the users already imported (same uid). Progress shows on \
            a terminal.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case auto, firebase, herald
    }

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The file: a Firebase export (.json or .csv), Herald CSV with a header row, or JSON lines.") var file: String
    @Option(help: "The file's format; auto tells a Firebase export from Herald's own formats.") var format: Format = .auto
    @Option(help: "The Firebase project's password hash parameters: the console's hash_config text, or JSON.")
    var hashConfig: String?
    @Option(help: "The hash algorithm (SCRYPT, STANDARD_SCRYPT, BCRYPT, PBKDF_SHA1, PBKDF2_SHA256, HMAC_*, SHA*, MD5).")
    var hashAlgo: String?
    @Option(help: "The signer key of SCRYPT or the key of HMAC_*, base64.") var hashKey: String?
    @Option(help: "SCRYPT's salt separator, base64.") var saltSeparator: String?
    @Option(help: "Rounds of SCRYPT, PBKDF2 and the SHA/MD5 digests.") var rounds: Int?
    @Option(help: "SCRYPT's memory cost (1-14), or STANDARD_SCRYPT's CPU/memory cost N.") var memCost: Int?
    @Option(help: "STANDARD_SCRYPT's parallelization.") var parallelization: Int?
    @Option(help: "STANDARD_SCRYPT's block size.") var blockSize: Int?
    @Option(help: "STANDARD_SCRYPT's derived key length.") var dkLen: Int?
    @Option(help: "SALT_FIRST or PASSWORD_FIRST, for HMAC_* and the SHA/MD5 digests.") var hashInputOrder: String?
    @Flag(help: "Replace accounts whose uid is already taken instead of skipping them.") var overwrite = false

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            let accounts = try runtime.actions().accounts
            let progress = ImportProgress(noun: "users", logger: runtime.logger)
            let report: AccountImportReport
            if try isFirebase() {
                let (users, fileConfig) = try FirebaseUserFile.read(file)
                let parameters = try hashParameters() ?? fileConfig ?? ImportedPasswordHash.Parameters()
                do {
                    report = try accounts.importFirebaseUsers(users, hash: parameters, overwrite: overwrite) {
                        progress.update($0, of: users.count)
                    }
                } catch let error as HeraldError where error.code == .missingHashAlgorithm {
                    throw HeraldError(
                        .missingHashAlgorithm,
                        "the users have password hashes: give the project's hash parameters with --hash-config FILE or --hash-algo")
                }
            } else {
                report = try accounts.importAccounts(path: file, overwrite: overwrite) { progress.update($0.done, of: $0.total) }
            }
            progress.finish()
            for rejected in report.rejected { FileHandle.standardError.write(Data("\(file):\(rejected.position): \(rejected.reason)\n".utf8)) }
            let rate = progress.elapsed > 0 ? String(format: ", %.0f/s", Double(report.imported) / progress.elapsed) : ""
            print(
                "imported \(report.imported) account(s), rejected \(report.rejected.count), skipped \(report.skipped) already there, "
                    + "in " + String(format: "%.1fs", progress.elapsed) + rate)
            if !report.rejected.isEmpty { throw ExitCode.failure }
        }
    }

    /// Whether the file is a Firebase export: asked for, or a JSON object with `users`, or CSV without a header.
    func isFirebase() throws -> Bool {
        switch format {
        case .firebase: return true
        case .herald: return false
        case .auto:
            guard let handle = FileHandle(forReadingAtPath: file) else { throw HeraldError(.argumentError, "cannot read \(file)") }
            defer { try? handle.close() }
            let head = String(decoding: (try handle.read(upToCount: 4096)) ?? Data(), as: UTF8.self)
            let first = head.split(separator: "\n").first.map(String.init) ?? ""
            if head.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("{") {
                // JSON lines hold one whole object per line; an export is one object (with `users`) over many lines.
                guard let object = try? JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any] else { return true }
                return object["users"] != nil
            }
            return !((try? CSVLine.parse(first)) ?? []).map { $0.trimmingCharacters(in: .whitespaces) }.contains("email")
        }
    }

    /// The hash parameters the options give, or nil when they give none.
    func hashParameters() throws -> ImportedPasswordHash.Parameters? {
        if let hashConfig {
            guard let text = try? String(contentsOfFile: hashConfig, encoding: .utf8) else {
                throw HeraldError(.argumentError, "cannot read the hash configuration \(hashConfig)")
            }
            return try FirebaseUserFile.hashParameters(text: text)
        }
        guard let hashAlgo else { return nil }
        let standard = hashAlgo.uppercased() == "STANDARD_SCRYPT"
        let order: String? = try hashInputOrder.map {
            switch $0.uppercased() {
            case "SALT_FIRST": "SALT_AND_PASSWORD"
            case "PASSWORD_FIRST": "PASSWORD_AND_SALT"
            default: throw HeraldError(.argumentError, "--hash-input-order must be SALT_FIRST or PASSWORD_FIRST, not \($0)")
            }
        }
        return ImportedPasswordHash.Parameters(
            hashAlgorithm: hashAlgo, signerKey: hashKey, saltSeparator: saltSeparator, rounds: rounds,
            memoryCost: standard ? nil : memCost, cpuMemCost: standard ? memCost : nil, parallelization: parallelization,
            blockSize: blockSize, dkLen: dkLen, passwordHashOrder: order)
    }
}

/// `herald accounts export FILE`: every account as a Firebase JSON export, password hashes included.
struct ExportAccounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export every account as a Firebase JSON export, with password hashes (file mode 0600).",
        discussion: """
            The file is what `firebase auth:export` writes ({"users": [...]}), with Herald's hash parameters \
            beside the users as hashConfig: `herald accounts import` reads it back as it is, and \
            `firebase auth:import FILE --hash-algo PBKDF2_SHA256 --rounds 210000` takes it. A user whose hash is \
            still the one it was imported with keeps it as heraldPasswordHash, which only Herald reads.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "Where to write the export (JSON).") var file: String
    @Option(help: "The export format; firebase is the only one.") var format: String = "firebase"

    func run() async throws {
        try await reportingErrors {
            guard format == "firebase" else { throw HeraldError(.argumentError, "--format must be firebase, not \(format)") }
            let runtime = try await Runtime.load(global)
            let accounts = try runtime.actions().accounts
            let progress = ImportProgress(noun: "users exported", logger: runtime.logger)
            let summary = try accounts.exportUsers(to: file) { progress.update($0, of: nil) }
            progress.finish()
            print("exported \(summary.users) account(s) to \(file) in " + String(format: "%.1fs", progress.elapsed))
            if summary.pendingImportedHashes > 0 {
                print("\(summary.pendingImportedHashes) still have the hash they were imported with (heraldPasswordHash, read by Herald only)")
            }
        }
    }
}

/// `herald accounts list`.
struct ListAccounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List accounts.",
        discussion: "Accounts stream in uid order (the order of accounts:batchGet), read 1,000 at a time, however many there are.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "At most this many accounts (the first in uid order).") var limit: Int?

    static let columns: [RowWriter.Column] = [
        .init("UID", key: "uid"), .init("EMAIL", key: "email"), .init("VERIFIED", key: "emailVerified"),
        .init("PASSWORD", key: "hasPassword"), .init("DISABLED", key: "disabled"), .init("NAME", key: "displayName"),
    ]

    func run() async throws {
        try await reportingErrors {
            let format = try output.resolved()
            if let limit, limit < 1 { throw HeraldError(.argumentError, "--limit: expected a positive number of accounts") }
            let runtime = try await Runtime.load(global)
            let writer = RowWriter(format: format, columns: Self.columns)
            var count = 0
            try runtime.actions().accounts.listAccounts(limit: limit) { account in
                let cells: [String?] = [
                    account.uid, account.email, "\(account.emailVerified)", "\(account.passwordHash != nil)", "\(account.disabled)",
                    account.displayName ?? "",
                ]
                try writer.write(cells, json: AccountJSON(account: account))
                count += 1
            }
            writer.finish(summary: "\(count) account(s)")
        }
    }
}
