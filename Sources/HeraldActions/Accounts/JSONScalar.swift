/// One value of a JSON-lines import row: a string, boolean, number or null. Arrays and objects (such as the
/// `providerUserInfo` of a Firebase export) are kept as `.ignored`: no import column takes them.
enum JSONScalar: Decodable, Sendable, Hashable {
    case string(String)
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case null
    case ignored

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else {
            self = .ignored
        }
    }

    /// The value as an import field: booleans as `true`/`false`, numbers as their text, nil for `null` and `.ignored`.
    var text: String? {
        switch self {
        case .string(let text): text
        case .bool(let value): value ? "true" : "false"
        case .integer(let value): String(value)
        case .number(let value): String(value)
        case .null, .ignored: nil
        }
    }
}
