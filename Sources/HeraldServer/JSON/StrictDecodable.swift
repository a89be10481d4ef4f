/// A request body that names every field it accepts; `StrictJSONDecoder` refuses any other, as Google's APIs do.
///
/// ```swift
/// struct DeleteBody: StrictDecodable {
///     let localId: String?
///     enum CodingKeys: String, CodingKey, CaseIterable { case localId }
///     static let ignoredFields: Set<String> = ["tenantId"]
/// }
/// ```
protocol StrictDecodable: Decodable, Sendable {
    associatedtype CodingKeys: CodingKey & CaseIterable
    /// Fields Firebase clients send that Herald accepts and has no use for (of any type).
    static var ignoredFields: Set<String> { get }
}

extension StrictDecodable {
    static var ignoredFields: Set<String> { [] }

    /// Every field name the body accepts, in camelCase.
    static var fieldNames: Set<String> { Set(CodingKeys.allCases.map(\.stringValue)).union(ignoredFields) }
}

/// Any field name: for reading a JSON object's keys before knowing whether they are allowed.
struct FieldName: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }

    /// `request_type` → `requestType`: Google's APIs accept snake_case names as their camelCase form.
    static func camelCase(_ name: String) -> String {
        guard name.contains("_") else { return name }
        let parts = name.split(separator: "_")
        let rest = parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }
        return (parts.first.map(String.init) ?? "") + rest.joined()
    }
}
