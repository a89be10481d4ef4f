import Foundation

/// One RFC 4180 CSV line: commas, double-quoted cells with `""` escapes.
///
/// Parsed as UTF-8 bytes, not `Character`s: a `"` followed by a combining mark is still a quote.
public enum CSVLine {
    /// One field as RFC 4180 writes it: quoted (every `"` doubled) when it holds a quote, comma, CR or LF, or
    /// starts or ends with a space.
    public static func quote(_ field: String) -> String {
        let special = field.utf8.contains { $0 == 34 || $0 == 44 || $0 == 10 || $0 == 13 }
        guard special || field.hasPrefix(" ") || field.hasSuffix(" ") else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    public static func parse(_ line: String) throws -> [String] {
        let bytes = line.utf8
        if !bytes.contains(quote) {  // the common case: no quoting, split on commas
            return bytes.split(separator: comma, omittingEmptySubsequences: false).map { String(Substring($0)) }
        }
        var cells: [String] = []
        var cell: [UInt8] = []
        var state = State.cellStart
        for byte in bytes {
            switch state {
            case .quoted:
                if byte == quote { state = .closing } else { cell.append(byte) }
            case .closing:  // after a quote inside a quoted cell: an escaped quote or the cell's end
                if byte == quote {
                    cell.append(byte)
                    state = .quoted
                } else if byte == comma {
                    endCell(&cells, &cell)
                    state = .cellStart
                } else {
                    throw HeraldError(.argumentError, "unexpected character after a closing quote")
                }
            case .cellStart, .unquoted:
                if byte == comma {
                    endCell(&cells, &cell)
                    state = .cellStart
                } else if byte == quote && state == .cellStart {
                    state = .quoted  // a quote opens a quoted cell only at its start; elsewhere it is a literal
                } else {
                    cell.append(byte)
                    state = .unquoted
                }
            }
        }
        if state == .quoted { throw HeraldError(.argumentError, "unterminated quoted field") }
        endCell(&cells, &cell)
        return cells
    }

    private enum State { case cellStart, unquoted, quoted, closing }

    private static let quote = UInt8(ascii: "\"")
    private static let comma = UInt8(ascii: ",")

    private static func endCell(_ cells: inout [String], _ cell: inout [UInt8]) {
        cells.append(String(decoding: cell, as: UTF8.self))
        cell.removeAll(keepingCapacity: true)
    }
}
