import Foundation
import HeraldCore

/// The rejects file: CSV with `line,reason,content`, valid whatever the content.
///
/// Quoting works on UTF-8 bytes: a `"` followed by a combining mark is one `Character` but still a quote.
final class RejectsWriter {
    private let handle: FileHandle
    private var pending = Data()

    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data("line,reason,content\n".utf8)),
            let handle = FileHandle(forWritingAtPath: path)
        else { throw HeraldError(.argumentError, "cannot write rejects file \(path)") }
        self.handle = handle
        handle.seekToEndOfFile()
    }

    func write(line: Int, reason: String, content: String) {
        pending.append(contentsOf: "\(line),".utf8)
        append(field: reason)
        pending.append(Byte.comma)
        append(field: content)
        pending.append(Byte.lf)
        if pending.count > 1 << 16 { flushPending() }
    }

    func close() {
        flushPending()
        try? handle.close()
    }

    private func flushPending() {
        handle.write(pending)
        pending.removeAll(keepingCapacity: true)
    }

    /// Appends one field, quoted (every `"` doubled) when it holds a quote, comma, CR or LF, or starts or
    /// ends with a space or tab.
    private func append(field: String) {
        let bytes = field.utf8
        guard Self.needsQuotes(bytes) else { return pending.append(contentsOf: bytes) }
        pending.append(Byte.quote)
        for byte in bytes {
            if byte == Byte.quote { pending.append(Byte.quote) }
            pending.append(byte)
        }
        pending.append(Byte.quote)
    }

    private static func needsQuotes(_ bytes: String.UTF8View) -> Bool {
        let blank: (UInt8) -> Bool = { $0 == Byte.space || $0 == Byte.tab }
        if let first = bytes.first, let last = bytes.last, blank(first) || blank(last) { return true }
        return bytes.contains { $0 == Byte.quote || $0 == Byte.comma || $0 == Byte.lf || $0 == Byte.cr }
    }

    private enum Byte {
        static let quote = UInt8(ascii: "\"")
        static let comma = UInt8(ascii: ",")
        static let lf = UInt8(ascii: "\n")
        static let cr = UInt8(ascii: "\r")
        static let space = UInt8(ascii: " ")
        static let tab = UInt8(ascii: "\t")
    }
}
