import Foundation
import HeraldCore

/// A request's JSON object, read strictly: unknown fields and wrong types are client errors.
///
/// snake_case keys are accepted as their camelCase form, as Google's APIs do.
struct JSONBody {
    private let values: [String: Any]

    init(_ data: Data, allowed: Set<String>) throws {
        let parsed: Any
        do {
            parsed = data.isEmpty ? [String: Any]() : try JSONSerialization.jsonObject(with: data)
        } catch {
            throw HeraldError(.invalidArgument, "Invalid JSON payload received.")
        }
        guard let object = parsed as? [String: Any] else {
            throw HeraldError(.invalidArgument, "Invalid JSON payload received. Expected an object.")
        }
        var values: [String: Any] = [:]
        for (key, value) in object {
            let name = Self.camelCase(key)
            guard allowed.contains(name) else {
                throw HeraldError(.invalidArgument, "Invalid JSON payload received. Unknown name \"\(key)\": Cannot find field.")
            }
            if !(value is NSNull) { values[name] = value }
        }
        self.values = values
    }

    func string(_ key: String) throws -> String? {
        guard let value = values[key] else { return nil }
        guard let text = value as? String else { throw Self.typeError(key, "TYPE_STRING") }
        return text
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = values[key] else { return nil }
        guard let number = value as? NSNumber, String(cString: number.objCType) == "c" else {
            throw Self.typeError(key, "TYPE_BOOL")
        }
        return number.boolValue
    }

    func strings(_ key: String) throws -> [String] {
        guard let value = values[key] else { return [] }
        if let text = value as? String { return [text] }
        guard let array = value as? [Any], let texts = array as? [String] else { throw Self.typeError(key, "TYPE_STRING") }
        return texts
    }

    private static func typeError(_ key: String, _ type: String) -> HeraldError {
        HeraldError(.invalidArgument, "Invalid value at '\(key)' (\(type))")
    }

    static func camelCase(_ key: String) -> String {
        guard key.contains("_") else { return key }
        let parts = key.split(separator: "_")
        return (parts.first.map(String.init) ?? "") + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}
