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
            if Self.isFlat(json), let body = try Self.decodeInOnePass(type, json, allowed: strict.fieldNames, caller: caller) {
                return body
            }
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

    /// A body with no `{` after its first byte has no nested object, so its field names are all at the top.
    private static func isFlat(_ json: Data) -> Bool {
        // memchr: `dropFirst().contains` went through Data's generic slice a byte at a time (1.7 % of the request's CPU).
        json.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0, bytes[0] == UInt8(ascii: "{") else { return false }
            return memchr(base + 1, Int32(UInt8(ascii: "{")), bytes.count - 1) == nil
        }
    }

    /// Decodes a flat body in one parse: its names are checked as sent and, when none is snake_case, the same
    /// decoder reads the body with its names as they are (the two-pass path parses twice and converts every name
    /// through a closure: 29 % of `sendOobCode`'s CPU on the request's task, most of it this). Nil when a name is
    /// snake_case, for the two-pass path to convert.
    private static func decodeInOnePass<T: Decodable>(
        _ type: T.Type, _ json: Data, allowed: Set<String>, caller: Actions.Caller
    ) throws -> T? {
        do {
            return try JSONDecoder().decode(OnePass<T>.self, from: json, configuration: FieldRules(allowed: allowed, caller: caller)).body
        } catch let error as DecodingError {
            throw invalidArgument(error)
        }
    }

    /// What `OnePass` checks the names against.
    private struct FieldRules: Sendable {
        let allowed: Set<String>
        let caller: Actions.Caller
    }

    /// A body read after its field names pass `check`; `body` is nil when a name needs converting.
    private struct OnePass<T: Decodable>: DecodableWithConfiguration {
        let body: T?

        init(from decoder: any Decoder, configuration rules: FieldRules) throws {
            let names: [String]
            do {
                names = try decoder.container(keyedBy: FieldName.self).allKeys.map(\.stringValue)
            } catch {
                throw HeraldError(.invalidArgument, "Invalid JSON payload received. Expected an object.")
            }
            if names.contains(where: { $0.utf8.contains(UInt8(ascii: "_")) }) {
                body = nil
                return
            }
            try StrictJSONDecoder.check(names, allowed: rules.allowed, caller: rules.caller)
            body = try T(from: decoder)
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
        try check(names, allowed: allowed, caller: caller)
    }

    /// The checks on a body's top-level names, as sent.
    private static func check(_ names: [String], allowed: Set<String>, caller: Actions.Caller) throws {
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
