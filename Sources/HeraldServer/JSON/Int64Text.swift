/// An int64 field as proto3 JSON writes it: a string of digits, or a number (the Admin SDKs' choice).
struct Int64Text: Decodable, Sendable, Hashable {
    let text: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            text = String(number)
        } else {
            text = try container.decode(String.self)
        }
    }
}
