import Foundation

/// A `Content-Type` value read leniently: the media type and its parameters.
struct ContentType: Equatable {
    /// `type/subtype` in lower case; `text/plain` when the field is absent or unreadable (RFC 2045 §5.2).
    var mediaType: String
    /// By lower-cased name; quoted values unquoted. RFC 2231 `name*` parameters are kept under `name`.
    var parameters: [String: String]

    init(_ value: String?) {
        parameters = [:]
        let value = value ?? ""
        let typeEnd = value.firstIndex(of: ";") ?? value.endIndex
        let type = value[..<typeEnd].prefix { $0 != "(" }.trimmingCharacters(in: .whitespaces).lowercased()
        mediaType = type.contains("/") && !type.contains(" ") ? type : "text/plain"

        var rest = value[typeEnd...].unicodeScalars.dropFirst()
        while !rest.isEmpty {
            let nameEnd = rest.firstIndex { $0 == "=" || $0 == ";" } ?? rest.endIndex
            var name = String(String.UnicodeScalarView(rest[..<nameEnd])).trimmingCharacters(in: .whitespaces).lowercased()
            rest = rest[nameEnd...]
            guard rest.first == "=" else {
                rest = rest.dropFirst()
                continue
            }
            rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
            var parameter = String.UnicodeScalarView()
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let scalar = rest.first, scalar != "\"" {
                    rest = rest.dropFirst()
                    if scalar == "\\", let escaped = rest.first {
                        parameter.append(escaped)
                        rest = rest.dropFirst()
                    } else {
                        parameter.append(scalar)
                    }
                }
                rest = rest.dropFirst()
                rest = rest.drop { $0 != ";" }.dropFirst()
            } else {
                // A token ends at a blank or a comment too.
                let end = rest.firstIndex(of: ";") ?? rest.endIndex
                parameter.append(contentsOf: rest[..<end].prefix { $0 != " " && $0 != "\t" && $0 != "(" })
                rest = rest[end...].dropFirst()
            }
            if name.hasSuffix("*") { name.removeLast() }
            if !name.isEmpty, parameters[name] == nil {
                parameters[name] = String(parameter).trimmingCharacters(in: .whitespaces)
            }
        }
    }
}
