/// A field that takes one string or an array of them (`accounts:lookup`'s `localId`, `deleteAttribute`).
struct StringList: Decodable, Sendable, Hashable {
    let values: [String]

    init(_ values: [String]) { self.values = values }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let one = try? container.decode(String.self) {
            values = [one]
        } else if let many = try? container.decode([String].self) {
            values = many
        } else {
            let context = DecodingError.Context(
                codingPath: decoder.codingPath, debugDescription: "expected a string or strings")
            throw DecodingError.typeMismatch(String.self, context)
        }
    }
}
