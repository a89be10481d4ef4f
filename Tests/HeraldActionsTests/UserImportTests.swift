import Crypto
import Foundation
import HeraldCore
import HeraldStore
import Testing

@testable import HeraldActions

/// Importing users as `accounts:batchCreate` and `herald accounts import` do: batch-wide refusals, per-user answers,
/// the first sign-in that swaps an imported hash for Herald's own, exports that read back.
@Suite struct UserImportTests {
    static let sha256 = ImportedPasswordHash.Parameters(hashAlgorithm: "SHA256", rounds: 1)

    /// A SHA256 (one round, salt first) hash of `password`, base64, with its salt.
    static func sha256User(_ uid: String, _ email: String, password: String) -> ImportedUser {
        let salt = Array("salt-\(uid)".utf8)
        let hash = Array(SHA256.hash(data: salt + Array(password.utf8)))
        return ImportedUser(
            localId: uid, email: email, passwordHash: Data(hash).base64EncodedString(), salt: Data(salt).base64EncodedString())
    }

    @Test func batchWideProblemsRefuseTheWholeBatch() throws {
        let accounts = try Rulebook().actions.accounts
        func code(_ users: [ImportedUser], _ options: UserImportOptions = UserImportOptions()) -> HeraldError.Code? {
            (#expect(throws: HeraldError.self) { try accounts.importUsers(users, hash: Self.sha256, options: options) })?.code
        }
        #expect(code([]) == .missingUserAccount)
        #expect(code(Array(repeating: ImportedUser(localId: "x"), count: 1001)) == .invalidArgument)
        #expect(code([ImportedUser(localId: "a"), ImportedUser(localId: "a")]) == .duplicateLocalID)
        let twice = [ImportedUser(localId: "a", email: "x@example.com"), ImportedUser(localId: "b", email: "X@example.com")]
        #expect(code(twice, UserImportOptions(sanityCheck: true)) == .duplicateEmail)
        let hashed = [Self.sha256User("a", "a@example.com", password: "secret-1")]
        let missing = #expect(throws: HeraldError.self) { try accounts.importUsers(hashed, hash: .init()) }
        #expect(missing?.code == .missingHashAlgorithm)
        var listed = 0
        try accounts.listAccounts { _ in listed += 1 }
        #expect(listed == 0)
    }

    @Test func listingPagesThroughEveryAccountInUidOrderAndStopsAtTheLimit() throws {
        let rulebook = try Rulebook()
        let accounts = rulebook.actions.accounts
        let uids = ["e", "a", "d", "b", "c"]
        for uid in uids { _ = try accounts.createAccount(SignUpRequest(email: "\(uid)@example.com", localId: uid), as: .admin) }
        func listed(limit: Int?, pageSize: Int) throws -> [String] {
            var seen: [String] = []
            try accounts.listAccounts(limit: limit, pageSize: pageSize) { seen.append($0.uid) }
            return seen
        }
        #expect(try listed(limit: nil, pageSize: 2) == uids.sorted())
        #expect(try listed(limit: nil, pageSize: 5) == uids.sorted())
        #expect(try listed(limit: 3, pageSize: 2) == ["a", "b", "c"])
        #expect(try listed(limit: 4, pageSize: 2) == ["a", "b", "c", "d"])
        #expect(try listed(limit: 9, pageSize: 1000) == uids.sorted())
    }

    @Test func refusedUsersAreAnsweredByIndexAndTheOthersImported() throws {
        let rulebook = try Rulebook()
        let accounts = rulebook.actions.accounts
        _ = try accounts.createAccount(SignUpRequest(email: "taken@example.com", localId: "existing"), as: .admin)
        var badHash = Self.sha256User("bad-hash", "bad@example.com", password: "secret-1")
        badHash.passwordHash = "AAAA"  // three bytes, not a SHA256
        let users = [
            ImportedUser(email: "nouid@example.com"),
            Self.sha256User("good", "Good@Example.com", password: "secret-1"),
            ImportedUser(localId: "bad-email", email: "not#an$email"),
            badHash,
            ImportedUser(localId: "claims", customAttributes: #"{"sub":"x"}"#),
            ImportedUser(localId: "existing", email: "other@example.com"),
            ImportedUser(localId: "email-taken", email: "taken@example.com"),
            ImportedUser(localId: "mfa", email: "m@example.com", secondFactors: 1),
            ImportedUser(localId: "phone", phoneNumber: "12345"),
        ]
        let failures = try accounts.importUsers(users, hash: Self.sha256)
        #expect(failures.map(\.index) == [0, 2, 3, 4, 5, 6, 7, 8])
        #expect(failures[0].message == "localId is missing")
        #expect(failures[1].message == "email is invalid")
        #expect(failures[2].message.hasPrefix("INVALID_PASSWORD_HASH"))
        #expect(failures[3].message == "Custom claims provided include a reserved claim.")
        #expect(failures[4].message == "localId belongs to an existing account - can not overwrite." && failures[4].conflict == .uidExists)
        #expect(failures[5].message == "email exists in other account in database")
        #expect(failures[7].message == "phone number format is invalid")
        let good = try #require(try rulebook.store.account(uid: "good"))
        #expect(good.email == "good@example.com" && good.providers == ["password"])
        #expect(good.passwordHash?.hasPrefix("firebase-sha256$1$SALT_AND_PASSWORD$") == true)
    }

    @Test func theFirstSignInReplacesAnImportedHashAndAWrongPasswordChangesNothing() async throws {
        let rulebook = try Rulebook()
        let accounts = rulebook.actions.accounts
        #expect(try accounts.importUsers([Self.sha256User("u1", "ada@example.com", password: "secret-1")], hash: Self.sha256).isEmpty)
        let imported = try #require(try rulebook.store.account(uid: "u1")?.passwordHash)
        await #expect(throws: HeraldError.self) { _ = try await accounts.signInWithPassword(email: "ada@example.com", password: "wrong-1") }
        #expect(try rulebook.store.account(uid: "u1")?.passwordHash == imported)
        let session = try await accounts.signInWithPassword(email: "ada@example.com", password: "secret-1")
        #expect(session.localId == "u1")
        let replaced = try #require(try rulebook.store.account(uid: "u1"))
        #expect(replaced.passwordHash?.hasPrefix("pbkdf2-sha256$") == true && replaced.lastLoginAt != nil)
        _ = try await accounts.signInWithPassword(email: "ada@example.com", password: "secret-1")  // Herald's own hash now
        await #expect(throws: HeraldError.self) { _ = try await accounts.signInWithPassword(email: "ada@example.com", password: "secret-2") }
    }

    @Test func plaintextPasswordsAreHashedAndAReRunSkipsWhatIsThere() throws {
        let rulebook = try Rulebook()
        let accounts = rulebook.actions.accounts
        let users = (0..<6).map { ImportedUser(localId: "p\($0)", email: "p\($0)@example.com", rawPassword: "password-\($0)") }
        let first = try accounts.importFirebaseUsers(users, hash: .init(), overwrite: false)
        #expect(first.imported == 6 && first.skipped == 0 && first.rejected.isEmpty)
        let hashes = try (0..<6).map { try rulebook.store.account(uid: "p\($0)")?.passwordHash }
        #expect(hashes.allSatisfy { $0?.hasPrefix("pbkdf2-sha256$") == true } && Set(hashes).count == 6)
        #expect(try PasswordHasher.verify("password-3", against: #require(hashes[3])))
        let again = try accounts.importFirebaseUsers(users + [ImportedUser(localId: "p0", email: "dup@example.com")], hash: .init(), overwrite: false)
        #expect(again.imported == 0 && again.skipped == 6)
        #expect(again.rejected.map(\.position) == [7] && again.rejected[0].reason.hasPrefix("DUPLICATE_LOCAL_ID"))
    }

    @Test func anExportReadsBackWithEveryPassword() async throws {
        let source = try Rulebook()
        let accounts = source.actions.accounts
        _ = try accounts.createAccount(SignUpRequest(email: "own@example.com", password: "own-secret", localId: "own"), as: .admin)
        var pending = Self.sha256User("pending", "pending@example.com", password: "old-secret")
        pending.customAttributes = #"{"role":"admin"}"#
        pending.providerUserInfo = [ImportedUser.Provider(providerId: "google.com", rawId: "g-1", email: "pending@example.com")]
        #expect(try accounts.importUsers([pending], hash: Self.sha256).isEmpty)
        let path = source.directory.appendingPathComponent("export.json").path
        let summary = try accounts.exportUsers(to: path)
        #expect(summary.users == 2 && summary.pendingImportedHashes == 1)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)

        let (users, config) = try FirebaseUserFile.read(path)
        #expect(config?.hashAlgorithm == "PBKDF2_SHA256" && config?.rounds == PasswordHasher.rounds)
        let target = try Rulebook()
        let report = try target.actions.accounts.importFirebaseUsers(users, hash: try #require(config), overwrite: false)
        #expect(report.imported == 2 && report.rejected.isEmpty)
        #expect(try await target.actions.accounts.signInWithPassword(email: "own@example.com", password: "own-secret").localId == "own")
        #expect(try await target.actions.accounts.signInWithPassword(email: "pending@example.com", password: "old-secret").localId == "pending")
        let moved = try #require(try target.store.account(uid: "pending"))
        #expect(moved.customAttributes == #"{"role":"admin"}"#)
        #expect(try target.store.identities(uid: "pending").map(\.rawId) == ["g-1"])
    }

    @Test func aUserThatCameWithAHashKeepsItWhateverRawPasswordSays() async throws {
        let rulebook = try Rulebook()
        var user = Self.sha256User("both", "both@example.com", password: "secret-1")
        user.rawPassword = "1"  // weak, and not the user's password
        #expect(try rulebook.actions.accounts.importUsers([user], hash: Self.sha256).isEmpty)
        #expect(try rulebook.store.account(uid: "both")?.passwordHash?.hasPrefix("firebase-sha256$") == true)
        let session = try await rulebook.actions.accounts.signInWithPassword(email: "both@example.com", password: "secret-1")
        #expect(session.localId == "both")
    }

    @Test func aFileImportSettlesBatchWideProblemsBeforeWritingAnything() throws {
        let rulebook = try Rulebook()
        let accounts = rulebook.actions.accounts
        // The only hashed user is in the second batch of 1,000; the hash parameters are wrong.
        var users = (0..<1001).map { ImportedUser(localId: "u\($0)", email: "u\($0)@example.com") }
        users[1000] = Self.sha256User("u1000", "u1000@example.com", password: "secret-1")
        let refused = #expect(throws: HeraldError.self) {
            try accounts.importFirebaseUsers(users, hash: ImportedPasswordHash.Parameters(hashAlgorithm: "SHA256"), overwrite: false)
        }
        #expect(refused?.code == .invalidHashRounds)
        #expect(try rulebook.store.accountCount() == 0)
        // Users without a uid are refused one by one, never as a batch-wide DUPLICATE_LOCAL_ID.
        let report = try accounts.importFirebaseUsers(
            [ImportedUser(email: "a@example.com"), ImportedUser(email: "b@example.com"), ImportedUser(localId: "c")],
            hash: .init(), overwrite: false)
        #expect(report.imported == 1 && report.rejected.map(\.position) == [1, 2])
        #expect(report.rejected.allSatisfy { $0.reason == "localId is missing" })
    }

    @Test func hashConfigErrorsNameTheLineNotItsText() {
        let text = "hash_config {\n  algorithm: SCRYPT,\n  base64_signer_key: jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0ui\n  iTvC8pVMXAn210wjLNmd,\n}"
        let error = #expect(throws: HeraldError.self) { try FirebaseUserFile.hashParameters(text: text) }
        #expect(error?.detail == "hash configuration line 4 is not 'name: value'")
        #expect(error.map { !$0.description.contains("iTvC8") } == true)
    }

    @Test func theConsolesHashConfigTextIsRead() throws {
        let text = """
            hash_config {
              algorithm: SCRYPT,
              base64_signer_key: jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==,
              base64_salt_separator: Bw==,
              rounds: 8,
              mem_cost: 14,
            }
            """
        let parameters = try FirebaseUserFile.hashParameters(text: text)
        #expect(parameters.hashAlgorithm == "SCRYPT" && parameters.rounds == 8 && parameters.memoryCost == 14)
        #expect(parameters.saltSeparator == "Bw==" && parameters.signerKey?.hasPrefix("jxspr8Ki") == true)
        let scheme = try ImportedPasswordHash.Scheme(parameters)
        // The firebase/scrypt README's published user.
        let hash = try ImportedPasswordHash(
            scheme, passwordHash: "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
            salt: "42xEC+ixf3L2lw==")
        #expect(hash.verify("user1password") && !hash.verify("user2password"))
        let bad = #expect(throws: HeraldError.self) { try FirebaseUserFile.hashParameters(text: "hash_config {\n  rounds: eight,\n}") }
        #expect(bad?.code == .argumentError)
    }

    @Test func aFirebaseCSVExportIsReadByColumn() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-csv-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var cells = Array(repeating: "", count: 52)
        cells[0] = "uid-1"
        cells[1] = "ada@example.com"
        cells[2] = "true"
        cells[3] = "aGFzaA=="
        cells[4] = "c2FsdA=="
        cells[5] = "\"Lovelace, Ada\nCountess\""
        cells[7] = "g-7"
        cells[8] = "ada@gmail.com"
        cells[23] = "1600000000000"
        cells[26] = "false"
        let path = directory.appendingPathComponent("users.csv").path
        try (cells.joined(separator: ",") + ",\n").write(toFile: path, atomically: true, encoding: .utf8)
        let (users, config) = try FirebaseUserFile.read(path)
        #expect(config == nil && users.count == 1)
        #expect(users[0].localId == "uid-1" && users[0].emailVerified == true && users[0].passwordHash == "aGFzaA==")
        #expect(users[0].displayName == "Lovelace, Ada\nCountess" && users[0].createdAt == "1600000000000")
        #expect(users[0].providerUserInfo?.first?.providerId == "google.com" && users[0].providerUserInfo?.first?.rawId == "g-7")
    }
}

/// Custom claims: checked as Firebase checks them, kept on the account, carried by every ID token at the top level.
@Suite struct CustomClaimsTests {
    @Test func claimsAreCheckedAsFirebaseChecksThem() throws {
        #expect(try CustomClaims.validate(#"{"role":"admin","level":3}"#) == #"{"role":"admin","level":3}"#)
        #expect(try CustomClaims.validate("{}") == nil)
        #expect(try CustomClaims.validate("") == nil)
        func code(_ text: String) -> HeraldError? { #expect(throws: HeraldError.self) { try CustomClaims.validate(text) } }
        #expect(code("[1,2]")?.code == .invalidClaims)
        #expect(code("not json")?.code == .invalidClaims)
        #expect(code(#"{"a":"\#(String(repeating: "x", count: 1000))"}"#)?.code == .claimsTooLarge)
        // Counted in UTF-16 units as Firebase counts: 400 emoji are 800 units, 500 are 1,000 and more with the braces.
        #expect(try CustomClaims.validate(#"{"a":"\#(String(repeating: "😀", count: 400))"}"#) != nil)
        #expect(code(#"{"a":"\#(String(repeating: "😀", count: 500))"}"#)?.code == .claimsTooLarge)
        let forbidden = code(#"{"role":"x","sub":"someone-else"}"#)
        #expect(forbidden?.code == .forbiddenClaim && forbidden?.detail == "sub")
    }

    @Test func idTokensCarryTheAccountsClaimsAndNeverLetThemReplaceItsOwn() async throws {
        let rulebook = try Rulebook()
        let accounts = rulebook.actions.accounts
        let account = try accounts.createAccount(
            SignUpRequest(email: "ada@example.com", password: "secret-1", displayName: "Ada"), as: .admin)
        var edit = AccountEdit()
        edit.customAttributes = #"{"role":"admin","tier":{"level":3},"name":"Countess"}"#
        _ = try accounts.editAccount(uid: account.uid, edit)
        // A ledger written by hand (or an older Herald) cannot slip a reserved claim past the token either.
        _ = try rulebook.store.updateAccount(uid: account.uid) {
            $0.customAttributes = #"{"role":"admin","tier":{"level":3},"name":"Countess","email":"evil@example.com","user_id":"x"}"#
        }
        let session = try await accounts.signInWithPassword(email: "ada@example.com", password: "secret-1")
        let claims = try #require(try JSONSerialization.jsonObject(with: CredentialTests.segment(session.idToken, 1)) as? [String: Any])
        #expect(claims["role"] as? String == "admin")
        #expect((claims["tier"] as? [String: Any])?["level"] as? Int == 3)
        #expect(claims["name"] as? String == "Countess")
        #expect(claims["email"] as? String == "ada@example.com" && claims["user_id"] as? String == account.uid)
        #expect(try await rulebook.actions.sessions.idTokens().verify(session.idToken).uid == account.uid)
        edit.customAttributes = "{}"
        #expect(try accounts.editAccount(uid: account.uid, edit).customAttributes == nil)
    }
}
