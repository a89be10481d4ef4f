/// CLDR's plural categories of a whole number, for the languages Herald's templates speak: which word form
/// follows the number ("1 hour", "2 hours"; Polish "1 godzinę", "2 godziny", "5 godzin").
///
/// The templates choose the form with sections: the variables `hoursOne`, `hoursFew` and `hoursMany` are set for
/// `expiresInHours` in its category (none of them for `other`), e.g.
/// `{{expiresInHours}} {{#hoursOne}}hour{{/hoursOne}}{{^hoursOne}}hours{{/hoursOne}}`.
public enum PluralCategory: String, Sendable, CaseIterable {
    case one, few, many, other

    /// The category of `number` in `language` (a language subtag such as `pl`), by the CLDR rules for integers.
    /// Languages without rules here use English's (one for 1, other otherwise).
    public static func of(_ number: Int, language: String) -> PluralCategory {
        let n = abs(number)
        switch language {
        // No plural forms after a number.
        case "id", "ms", "ja", "ko", "zh", "th", "vi", "tr": return .other
        // one: i = 0 or n = 1.
        case "fa", "hi", "bn": return n <= 1 ? .one : .other
        // one: 0 and 1.
        case "fr", "pt": return n <= 1 ? .one : .other
        case "pl":
            if n == 1 { return .one }
            let (tens, hundreds) = (n % 10, n % 100)
            return (2...4).contains(tens) && !(12...14).contains(hundreds) ? .few : .many
        case "ru", "uk":
            let (tens, hundreds) = (n % 10, n % 100)
            if tens == 1 && hundreds != 11 { return .one }
            return (2...4).contains(tens) && !(12...14).contains(hundreds) ? .few : .many
        case "cs", "sk":
            return n == 1 ? .one : (2...4).contains(n) ? .few : .other
        default: return n == 1 ? .one : .other
        }
    }

    /// The template variables that name this category for `prefix` (`hours` → `hoursOne`, …): one or none.
    func variables(_ prefix: String) -> [String: String] {
        self == .other ? [:] : [prefix + rawValue.prefix(1).uppercased() + rawValue.dropFirst(): "1"]
    }
}
