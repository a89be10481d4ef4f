import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// Reads request bodies strictly, with Google's messages: an unknown field, a wrong type, malformed JSON
/// or a body over the size limit is an `INVALID_ARGUMENT`. JSON null counts as absent.
///
/// ```swift
/// let body = try await request.decode(as: SendOobCodeBody.self, context: context)
/// ```
struct StrictJSONDecoder: RequestDecoder {
    func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        let limit = context.maxUploadSize
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: limit)
        } catch {
            throw HeraldError(.invalidArgument, "the request body is larger than \(limit) bytes")
        }
        let caller = (context as? HeraldRequestContext)?.caller ?? .admin
        return try decode(type, from: Data(body.readableBytesView), caller: caller)
    }

    /// Decodes `data` (empty means `{}`), checking field names when `T` is `StrictDecodable`; an app
    /// caller may not name `targetProjectId`.
    func decode<T: Decodable>(_ type: T.Type, from data: Data, caller: Actions.Caller = .admin) throws -> T {
        let json = data.isEmpty ? Data("{}".utf8) : data
        if let strict = T.self as? any StrictDecodable.Type {
            try Self.checkFields(json, allowed: strict.fieldNames, caller: caller)
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in FieldName(FieldName.camelCase(path.last?.stringValue ?? "")) }
        do {
            return try decoder.decode(T.self, from: json)
        } catch let error as DecodingError {
            throw Self.invalidArgument(error)
        }
    }

    /// - Throws: `INVALID_ARGUMENT` unless `json` is an object whose every field is `allowed`;
    ///   `INSUFFICIENT_PERMISSION` when an app names `targetProjectId`, which only administrators may.
    private static func checkFields(_ json: Data, allowed: Set<String>, caller: Actions.Caller) throws {
        let names: [String]
        do {
            names = try JSONDecoder().decode(TopLevelNames.self, from: json).names
        } catch DecodingError.dataCorrupted {
            throw HeraldError(.invalidArgument, "Invalid JSON payload received.")
        } catch {
            throw HeraldError(.invalidArgument, "Invalid JSON payload received. Expected an object.")
        }
        if caller == .app, names.contains(where: { FieldName.camelCase($0).lowercased() == "targetprojectid" }) {
            throw HeraldError(.insufficientPermission, "Only authenticated requests can specify target_project_id.")
        }
        for name in names where !allowed.contains(FieldName.camelCase(name)) {
            throw HeraldError(.invalidArgument, "Invalid JSON payload received. Unknown name \"\(name)\": Cannot find field.")
        }
    }

    /// Google's message for a value the body's type cannot hold.
    static func invalidArgument(_ error: DecodingError) -> HeraldError {
        switch error {
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let field = context.codingPath.first?.stringValue ?? ""
            let expected = type == Bool.self ? "TYPE_BOOL" : "TYPE_STRING"
            return HeraldError(.invalidArgument, "Invalid value at '\(field)' (\(expected))")
        case .keyNotFound(let key, _):
            return HeraldError(.invalidArgument, "Invalid JSON payload received. Missing field \"\(key.stringValue)\".")
        default:
            return HeraldError(.invalidArgument, "Invalid JSON payload received.")
        }
    }

    /// The names of a JSON object's fields, as sent.
    private struct TopLevelNames: Decodable {
        let names: [String]

        init(from decoder: any Decoder) throws {
            names = try decoder.container(keyedBy: FieldName.self).allKeys.map(\.stringValue)
        }
    }
}
