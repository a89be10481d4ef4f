import HeraldActions
import HeraldCore
import Hummingbird

/// An administrator's batch methods: importing users with their password hashes, listing them a page at a time,
/// querying and deleting them (firebase-admin's `import_users`, `list_users`, `delete_users`; `firebase auth:import`
/// and `auth:export`).
extension IdentityToolkitController {
    /// `accounts:batchCreate` (v3 `uploadAccount`): users refused one by one are answered in `error`; the rest are
    /// written in one transaction.
    @Sendable func batchCreate(_ request: Request, context: HeraldRequestContext) async throws -> BatchCreateReply {
        try context.requireAdmin()
        let body = try await request.decode(as: BatchCreateBody.self, context: context)
        let options = UserImportOptions(allowOverwrite: body.allowOverwrite ?? false, sanityCheck: body.sanityCheck ?? false)
        let failures = try await offload { try accounts.importUsers(body.users ?? [], hash: body.hashParameters, options: options) }
        return BatchCreateReply(error: failures.isEmpty ? nil : failures)
    }

    /// `GET accounts:batchGet?maxResults=&nextPageToken=`: a page of accounts in uid order.
    @Sendable func batchGet(_ request: Request, context: HeraldRequestContext) async throws -> BatchGetReply {
        try context.requireAdmin()
        let parameters = request.uri.queryParameters
        return try await page(maxResults: parameters.get("maxResults").flatMap { Int($0) }, token: parameters.get("nextPageToken"))
    }

    /// v3 `downloadAccount`: `accounts:batchGet` with its parameters in the body.
    @Sendable func downloadAccount(_ request: Request, context: HeraldRequestContext) async throws -> BatchGetReply {
        try context.requireAdmin()
        let body = try await request.decode(as: DownloadAccountBody.self, context: context)
        return try await page(maxResults: body.maxResults.flatMap { Int($0.text) }, token: body.nextPageToken)
    }

    /// Up to `maxResults` accounts (20 when absent or not positive, at most 1,000), after the page token.
    private func page(maxResults: Int?, token: String?) async throws -> BatchGetReply {
        let limit = min(maxResults.flatMap { $0 > 0 ? $0 : nil } ?? 20, AccountsService.maximumImportBatch)
        return try await offload {
            let page = try accounts.accountsPage(after: token, limit: limit)
            let users = try page.accounts.map { UserInfo($0, identities: try accounts.identities(of: $0.uid)) }
            return BatchGetReply(users: users, nextPageToken: page.nextPageToken)
        }
    }

    /// `accounts:query` (Identity Platform): the count, or accounts by `email` / `userId` expressions, or a page of
    /// all accounts in uid order (`offset`, `limit` up to 500).
    @Sendable func query(_ request: Request, context: HeraldRequestContext) async throws -> QueryReply {
        try context.requireAdmin()
        let body = try await request.decode(as: QueryBody.self, context: context)
        if let sortBy = body.sortBy, !["USER_ID", "SORT_BY_FIELD_UNSPECIFIED"].contains(sortBy) {
            throw HeraldError(.invalidArgument, "sortBy \(sortBy) is not supported; Herald sorts by USER_ID")
        }
        if let order = body.order, !["ASC", "ORDER_UNSPECIFIED"].contains(order) {
            throw HeraldError(.invalidArgument, "order \(order) is not supported; Herald answers in ascending order")
        }
        let limit = try body.limit.map { try Self.count($0.text, "limit") } ?? 500
        let offset = try body.offset.map { try Self.count($0.text, "offset") } ?? 0
        guard (1...500).contains(limit) else { throw HeraldError(.invalidArgument, "limit must be from 1 to 500") }
        let expression = body.expression ?? []
        return try await offload {
            let count: Int
            let page: [Account]
            if expression.isEmpty {
                count = try accounts.accountCount()
                page = body.returnUserInfo == false ? [] : try accounts.accounts(offset: offset, limit: limit)
            } else {
                let found = try accounts.accounts(
                    uids: expression.compactMap(\.userId), emails: expression.compactMap(\.email),
                    phoneNumbers: expression.compactMap(\.phoneNumber)
                ).sorted { $0.uid.utf8.lexicographicallyPrecedes($1.uid.utf8) }
                count = found.count
                page = Array(found.dropFirst(offset).prefix(limit))
            }
            guard body.returnUserInfo != false else { return QueryReply(recordsCount: String(count), userInfo: nil) }
            let users = try page.map { UserInfo($0, identities: try accounts.identities(of: $0.uid)) }
            return QueryReply(recordsCount: String(count), userInfo: users)
        }
    }

    /// `accounts:batchDelete`: disabled accounts, or any with `force`; the others are answered in `errors`.
    @Sendable func batchDelete(_ request: Request, context: HeraldRequestContext) async throws -> BatchDeleteReply {
        try context.requireAdmin()
        let body = try await request.decode(as: BatchDeleteBody.self, context: context)
        let refused = try await offload { try accounts.deleteAccounts(uids: body.localIds ?? [], force: body.force ?? false) }
        let errors = refused.map { BatchDeleteReply.Failure(index: $0.index, localId: $0.uid, message: $0.message) }
        return BatchDeleteReply(errors: errors.isEmpty ? nil : errors)
    }

    /// A count from an int64 field, bounded so no arithmetic on it can overflow.
    private static func count(_ text: String, _ field: String) throws -> Int {
        guard let value = Int(text), (0...Int(Int32.max)).contains(value) else {
            throw HeraldError(.invalidArgument, "\(field) must be a count from 0 to \(Int32.max)")
        }
        return value
    }
}

/// `accounts:batchCreate`'s body: the users, the hash fields of the batch, and the import's flags.
struct BatchCreateBody: StrictDecodable {
    let users: [ImportedUser]?
    let hashAlgorithm: String?
    let signerKey: String?
    let saltSeparator: String?
    let rounds: Int?
    let memoryCost: Int?
    let cpuMemCost: Int?
    let parallelization: Int?
    let blockSize: Int?
    let dkLen: Int?
    let passwordHashOrder: String?
    let allowOverwrite: Bool?
    let sanityCheck: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case users, hashAlgorithm, signerKey, saltSeparator, rounds, memoryCost, cpuMemCost, parallelization, blockSize, dkLen,
            passwordHashOrder, allowOverwrite, sanityCheck
    }

    static let ignoredFields: Set<String> = ["targetProjectId", "tenantId", "delegatedProjectNumber", "argon2Parameters"]

    var hashParameters: ImportedPasswordHash.Parameters {
        ImportedPasswordHash.Parameters(
            hashAlgorithm: hashAlgorithm, signerKey: signerKey, saltSeparator: saltSeparator, rounds: rounds,
            memoryCost: memoryCost, cpuMemCost: cpuMemCost, parallelization: parallelization, blockSize: blockSize, dkLen: dkLen,
            passwordHashOrder: passwordHashOrder)
    }
}

/// `accounts:batchCreate`'s answer; `error` lists the users left out, when any was.
struct BatchCreateReply: ResponseEncodable {
    let kind = "identitytoolkit#UploadAccountResponse"
    let error: [UserImportFailure]?
}

/// v3 `downloadAccount`'s body.
struct DownloadAccountBody: StrictDecodable {
    let maxResults: Int64Text?
    let nextPageToken: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case maxResults, nextPageToken }

    static let ignoredFields: Set<String> = ["targetProjectId", "tenantId", "delegatedProjectNumber"]
}

/// `accounts:batchGet`'s answer; the page token comes whenever the page is full.
struct BatchGetReply: ResponseEncodable {
    let kind = "identitytoolkit#DownloadAccountResponse"
    let users: [UserInfo]
    let nextPageToken: String?
}

/// `accounts:query`'s body.
struct QueryBody: StrictDecodable {
    struct Expression: Decodable, Sendable {
        let email: String?
        let userId: String?
        let phoneNumber: String?
    }

    let returnUserInfo: Bool?
    let limit: Int64Text?
    let offset: Int64Text?
    let expression: [Expression]?
    let sortBy: String?
    let order: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case returnUserInfo, limit, offset, expression, sortBy, order }

    static let ignoredFields: Set<String> = ["targetProjectId", "tenantId"]
}

/// `accounts:query`'s answer.
struct QueryReply: ResponseEncodable {
    let recordsCount: String
    let userInfo: [UserInfo]?
}

/// `accounts:batchDelete`'s body.
struct BatchDeleteBody: StrictDecodable {
    let localIds: [String]?
    let force: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable { case localIds, force }

    static let ignoredFields: Set<String> = ["targetProjectId", "tenantId"]
}

/// `accounts:batchDelete`'s answer; `errors` lists the accounts left alone, when any was.
struct BatchDeleteReply: ResponseEncodable {
    struct Failure: Encodable, Sendable {
        let index: Int
        let localId: String
        let message: String
    }

    let errors: [Failure]?
}
