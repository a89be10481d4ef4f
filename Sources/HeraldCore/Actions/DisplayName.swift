/// Checks a display name before it reaches a template or a header.
public enum DisplayName {
    /// The longest display name accepted, in characters.
    public static let maximumLength = 256

    /// Returns the name, or throws `INVALID_DISPLAY_NAME` for control characters (CR, LF, …) or excess length.
    public static func validate(_ name: String) throws -> String {
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw HeraldError(.invalidDisplayName, "display name contains a control character (CR, LF or similar): \(EmailAddress.printable(name))")
        }
        if name.count > maximumLength {
            throw HeraldError(.invalidDisplayName, "display name is longer than \(maximumLength) characters")
        }
        return name
    }
}
