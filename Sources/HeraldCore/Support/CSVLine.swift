import Foundation

/// One RFC 4180 CSV line: commas, double-quoted cells with `""` escapes.
public enum CSVLine {
    public static func parse(_ line: String) throws -> [String] {
        if !line.utf8.contains(UInt8(ascii: "\"")) {  // the common case: no quoting, split on commas
            return line.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map { String(Substring($0)) }
        }
        var cells: [String] = []
        var cell = ""
        var quoted = false
        var iterator = Array(line).makeIterator()
        var atCellStart = true
        while let character = iterator.next() {
            if quoted {
                if character == "\"" {
                    if let next = iterator.next() {
                        if next == "\"" {
                            cell.append("\"")
                        } else if next == "," {
                            quoted = false
                            cells.append(cell)
                            cell = ""
                            atCellStart = true
                        } else {
                            throw HeraldError(.argumentError, "unexpected character after a closing quote")
                        }
                    } else {
                        quoted = false
                    }
                } else {
                    cell.append(character)
                }
            } else if character == "\"" && atCellStart {
                quoted = true
                atCellStart = false
            } else if character == "," {
                cells.append(cell)
                cell = ""
                atCellStart = true
            } else {
                cell.append(character)
                atCellStart = false
            }
        }
        if quoted { throw HeraldError(.argumentError, "unterminated quoted field") }
        cells.append(cell)
        return cells
    }
}
