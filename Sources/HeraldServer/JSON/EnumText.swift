/// A protobuf enum field as proto3 JSON allows it: its name, or its number (the Android SDK sends numbers).
///
/// ```swift
/// body.requestType?.name(ActionKind.requestType(number:))  // 6 → "EMAIL_SIGNIN"
/// ```
struct EnumText: Decodable, Sendable, Hashable {
    let text: String?
    let number: Int?

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int.self) {
            self.number = number
            text = nil
        } else {
            text = try container.decode(String.self)
            number = nil
        }
    }

    /// The value's name; a number the enum does not have is returned as its digits (refused by the caller).
    func name(_ names: (Int) -> String?) -> String {
        if let text { return text }
        return number.flatMap(names) ?? number.map(String.init) ?? ""
    }
}

/// A repeated protobuf enum field: one value or several, names or numbers.
struct EnumList: Decodable, Sendable, Hashable {
    let values: [EnumText]

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let many = try? container.decode([EnumText].self) {
            values = many
        } else {
            values = [try container.decode(EnumText.self)]
        }
    }

    func names(_ names: (Int) -> String?) -> [String] { values.map { $0.name(names) } }
}

/// `deleteAttribute`'s enum (`UserAttributeName`) by number.
enum UserAttributeName {
    static func name(_ number: Int) -> String? {
        [0: "USER_ATTRIBUTE_NAME_UNSPECIFIED", 1: "EMAIL", 2: "DISPLAY_NAME", 3: "PROVIDER", 4: "PHOTO_URL", 5: "PASSWORD", 6: "RAW_USER_INFO"][
            number]
    }
}
