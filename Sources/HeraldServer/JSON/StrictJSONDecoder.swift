import Foundation
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
        let data = Data(body.readableBytesView)
        if let context = context as? HeraldRequestContext, context.caller == .app, Self.namesTargetProject(data) {
            throw HeraldError(.insufficientPermission, "Only authenticated requests can specify target_project_id.")
        }
        return try decode(type, from: data)
    }

    /// Whether a body names `targetProjectId`, which only administrators may.
    private static func namesTargetProject(_ data: Data) -> Bool {
        guard let names = try? JSONDecoder().decode(TopLevelNames.self, from: data).names else { return false }
        return names.contains { FieldName.camelCase($0).lowercased() == "targetprojectid" }
    }

    /// Decodes `data` (empty means `{}`), checking field names when `T` is `StrictDecodable`.
    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let json = data.isEmpty ? Data("{}".utf8) : data
        if let strict = T.self as? any StrictDecodable.Type {
            try Self.checkFields(json, allowed: strict.fieldNames)
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in FieldName(FieldName.camelCase(path.last?.stringValue ?? "")) }
        do {
            return try decoder.decode(T.self, from: json)
        } catch let error as DecodingError {
            throw Self.invalidArgument(error)
        }
    }

    /// - Throws: `INVALID_ARGUMENT` unless `json` is an object whose every field is `allowed`.
    private static func checkFields(_ json: Data, allowed: Set<String>) throws {
        let names: [String]
        do {
            names = try JSONDecoder().decode(TopLevelNames.self, from: json).names
        } catch DecodingError.dataCorrupted {
            throw HeraldError(.invalidArgument, "Invalid JSON payload received.")
        } catch {
            throw HeraldError(.invalidArgument, "Invalid JSON payload received. Expected an object.")
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
