/// Checks a display name before it reaches a template or a header.
public enum DisplayName {
    /// The longest display name accepted, in characters.
    public static let maximumLength = 256

    /// Returns the name, or throws `INVALID_DISPLAY_NAME` for control characters (CR, LF, …) or excess length.
    public static func validate(_ name: String) throws -> String {
        // Unicode's control category (Cc) is fixed at U+0000–U+001F and U+007F–U+009F: compared by value, no
        // property lookup per character.
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            throw HeraldError(.invalidDisplayName, "display name contains a control character (CR, LF or similar): \(EmailAddress.printable(name))")
        }
        if name.count > maximumLength {
            throw HeraldError(.invalidDisplayName, "display name is longer than \(maximumLength) characters")
        }
        return name
    }
}
