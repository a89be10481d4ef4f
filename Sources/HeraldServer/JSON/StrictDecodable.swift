import Synchronization

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

    /// Every field name the body accepts, in camelCase; built once per type (building the set for every request was
    /// 1.7 % of `sendOobCode`'s CPU).
    static var fieldNames: Set<String> {
        let type = ObjectIdentifier(Self.self)
        if let names = fieldNameCache.withLock({ $0[type] }) { return names }
        let names = Set(CodingKeys.allCases.map(\.stringValue)).union(ignoredFields)
        fieldNameCache.withLock { $0[type] = names }
        return names
    }
}

/// `StrictDecodable.fieldNames` of each body type decoded so far.
private let fieldNameCache = Mutex<[ObjectIdentifier: Set<String>]>([:])

/// Any field name: for reading a JSON object's keys before knowing whether they are allowed.
struct FieldName: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }

    /// `request_type` → `requestType`: Google's APIs accept snake_case names as their camelCase form.
    static func camelCase(_ name: String) -> String {
        // A byte test: `String.contains(_:)` with a string argument goes through Foundation's locale-aware search.
        guard name.utf8.contains(UInt8(ascii: "_")) else { return name }
        let parts = name.split(separator: "_")
        let rest = parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }
        return (parts.first.map(String.init) ?? "") + rest.joined()
    }
}
