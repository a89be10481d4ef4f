/// JSON string literals written by hand where a `JSONEncoder` per value would cost too much: log lines and the
/// campaign importer's variables column.
public enum JSONText {
    /// `text` as a JSON string literal: quotes, backslashes and control characters escaped (C0, DEL and C1, and
    /// U+2028/U+2029, which break JavaScript readers), everything else as it is (UTF-8).
    public static func quote(_ text: String) -> String {
        var out = ""
        append(text, to: &out)
        return out
    }

    /// Appends `text` as a JSON string literal to `line`.
    public static func append(_ text: String, to line: inout String) {
        line += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                line += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: line.unicodeScalars.append(scalar)
            }
        }
        line += "\""
    }
}
