import Foundation
import HeraldActions

/// Writes a listing's rows to standard output as they come, in any `OutputFormat`, in bounded memory.
///
/// A table takes its column widths from the first `lookAhead` rows and streams the rest with them (a longer cell
/// widens its own line only); JSON is one array written element by element; JSON lines and CSV are a row a line.
/// Output goes out in 64 KB writes, so a listing of a whole ledger never sits in memory.
///
/// ```swift
/// let writer = RowWriter(format: .table, columns: [.init("ID", key: "id"), .init("STATE", key: "state")])
/// try writer.write(["1", "sent"], json: row)
/// writer.finish(summary: "1 message(s)")
/// ```
final class RowWriter {
    /// A column: its table title, its CSV header, and the widest a table cell may be (longer ones are cut).
    struct Column {
        let title: String
        let key: String
        let maxWidth: Int?

        init(_ title: String, key: String, maxWidth: Int? = nil) {
            self.title = title
            self.key = key
            self.maxWidth = maxWidth
        }
    }

    static let lookAhead = 1000

    let format: OutputFormat
    let columns: [Column]
    private(set) var count = 0
    private var pending: [[String]] = []
    private var widths: [Int]?
    private var buffer = Data()
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    init(format: OutputFormat, columns: [Column]) {
        self.format = format
        self.columns = columns
        switch format {
        case .csv: emit(columns.map { Self.csvCell($0.key) }.joined(separator: ","))
        case .json: append("[")
        case .table, .jsonl: break
        }
    }

    /// One row: its cells (nil prints `-` in a table, nothing in CSV) and the object JSON formats print.
    func write(_ cells: [String?], json: some Encodable) throws {
        count += 1
        switch format {
        case .table:
            let shown = zip(columns, cells).map { column, cell in
                let text = cell ?? "-"
                return column.maxWidth.map { String(text.prefix($0)) } ?? text
            }
            if let widths {
                emit(Self.line(shown, widths))
            } else {
                pending.append(shown)
                if pending.count >= Self.lookAhead { flushPending() }
            }
        case .csv:
            emit(cells.map { Self.csvCell($0 ?? "") }.joined(separator: ","))
        case .jsonl:
            emit(String(decoding: try encoder.encode(json), as: UTF8.self))
        case .json:
            append(count == 1 ? "\n  " : ",\n  ")
            append(String(decoding: try encoder.encode(json), as: UTF8.self))
        }
    }

    /// Ends the listing; a table gets `summary` (`3 message(s)`) or, with no rows, `empty` as its last line.
    func finish(summary: String? = nil, empty: String? = nil) {
        switch format {
        case .table:
            flushPending()
            if count == 0, let empty {
                emit(empty)
            } else if let summary {
                emit(summary)
            }
        case .json: emit(count == 0 ? "]" : "\n]")
        case .csv, .jsonl: break
        }
        FileHandle.standardOutput.write(buffer)
        buffer.removeAll()
    }

    private func flushPending() {
        guard widths == nil else { return }
        let measured = columns.indices.map { index in
            pending.map { $0[index].count }.max().map { max($0, columns[index].title.count) } ?? columns[index].title.count
        }
        widths = measured
        emit(Self.line(columns.map(\.title), measured))
        for row in pending { emit(Self.line(row, measured)) }
        pending = []
    }

    private static func line(_ cells: [String], _ widths: [Int]) -> String {
        zip(cells, widths).map { cell, width in cell.padding(toLength: max(width, cell.count), withPad: " ", startingAt: 0) }
            .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }

    /// RFC 4180 quoting, and no formula a spreadsheet would run (`AuditFormatter.inert`).
    static func csvCell(_ text: String) -> String {
        let safe = AuditFormatter.inert(text)
        guard safe.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) else { return safe }
        return "\"" + safe.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    private func emit(_ line: String) {
        append(line)
        append("\n")
    }

    private func append(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count > 1 << 16 {
            FileHandle.standardOutput.write(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }
}
