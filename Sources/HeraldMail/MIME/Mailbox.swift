import HeraldCore

/// An address with an optional display name, as in `From: Herald <noreply@example.com>`.
public struct Mailbox: Sendable, Hashable {
    public let name: String?
    public let address: EmailAddress

    public init(name: String?, address: EmailAddress) throws {
        let name = try name.flatMap { $0.isEmpty ? nil : try DisplayName.validate($0) }
        self.name = name
        self.address = address
        headerValue = name.map { "\(HeaderEncoding.phrase($0)) <\(address.value)>" } ?? address.value
    }

    /// Parses `Name <addr@example.com>` or a bare `addr@example.com`.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let open = trimmed.lastIndex(of: "<"), trimmed.hasSuffix(">") {
            var name = trimmed[..<open].trimmingCharacters(in: .whitespaces)
            if name.count >= 2, name.hasPrefix("\""), name.hasSuffix("\"") { name = String(name.dropFirst().dropLast()) }
            let address = trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)]
            try self.init(name: name, address: EmailAddress(String(address)))
        } else {
            try self.init(name: nil, address: EmailAddress(trimmed))
        }
    }

    /// The header form: `"Name" <addr>`, an RFC 2047 encoded name, or the bare address.
    let headerValue: String
}
