import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Logging

/// The real Herald application over a fresh SQLite ledger and the repository's templates.
struct TestServer {
    static let projectID = "herald-test"
    static let apiKey = "test-api-key"
    static let adminToken = "test-admin-token-5d0e8b3a9c71f2e4"
    static let logger = Logger(label: "herald-router-tests")

    let actions: Actions
    let health = Health()

    init(owner: HeraldConfiguration.Accounts.Owner = .herald, _ change: (inout HeraldConfiguration) -> Void = { _ in }) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = HeraldConfiguration()
        configuration.project.id = Self.projectID
        configuration.project.apiKey = Self.apiKey
        configuration.server.adminToken = Self.adminToken
        configuration.accounts.owner = owner
        configuration.links.authorizedDomains = ["localhost", "app.example.com"]
        configuration.tokens.keyFile = directory.appendingPathComponent("signing-keys.json").path
        let repository = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../..")
        configuration.templatesDirectory = repository.appending(path: "templates").path
        change(&configuration)
        let store = try SQLiteStore(path: directory.appendingPathComponent("ledger.sqlite").path)
        let templates = try TemplateLibrary(
            directory: configuration.templatesDirectory, defaultLocale: configuration.links.defaultLocale)
        let composer = try MessageComposer(configuration: configuration, templates: templates)
        actions = Actions(
            configuration: configuration, store: store, composer: composer,
            testSend: { _ in throw HeraldError(.unavailable, "the router tests have no relay") }, logger: Self.logger)
    }

    /// `herald serve`'s application, ready for `app.test(.router)`.
    func application() throws -> some ApplicationProtocol {
        try HeraldServer.application(actions: actions, health: health, logger: Self.logger) { _ in }
    }
}

/// How a test call authenticates.
enum Credential {
    /// The project's API key in `?key=`.
    case app
    /// `Authorization: Bearer <server.adminToken>`.
    case admin
    case bearer(String)
    case key(String)
    case none
}

extension TestClientProtocol {
    /// POSTs `json` to `path` (`/v1/accounts:sendOobCode`) with `credential`.
    func post(_ path: String, as credential: Credential = .app, _ json: String = "{}") async throws -> TestResponse {
        var uri = path
        var headers: HTTPFields = [.contentType: "application/json"]
        switch credential {
        case .app: uri += "?key=\(TestServer.apiKey)"
        case .key(let key): uri += "?key=\(key)"
        case .admin: headers[.authorization] = "Bearer \(TestServer.adminToken)"
        case .bearer(let token): headers[.authorization] = "Bearer \(token)"
        case .none: break
        }
        return try await execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: json))
    }

    /// Calls an Identity Toolkit method under this project's `/v1/projects/{project}/` family.
    func call(_ method: String, as credential: Credential = .app, _ json: String = "{}") async throws -> TestResponse {
        try await post("/v1/projects/\(TestServer.projectID)/\(method)", as: credential, json)
    }
}

extension TestResponse {
    /// The body as text.
    var text: String { String(decoding: body.readableBytesView, as: UTF8.self) }

    /// The body decoded as `T`.
    func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
    }

    /// The body as Firebase's error envelope.
    var error: ErrorReply.Body? { try? decode(ErrorReply.self).error }

    /// The answer's fields when every one is a string (most Identity Toolkit replies).
    var fields: [String: String]? { try? decode([String: String].self) }
}

/// Firebase's error envelope, as a client reads it.
struct ErrorReply: Decodable {
    struct Body: Decodable {
        let code: Int
        let message: String
        let status: String?
        let errors: [Detail]
    }

    struct Detail: Decodable {
        let message: String
        let domain: String
        let reason: String
        let location: String?
    }

    let error: Body
}
