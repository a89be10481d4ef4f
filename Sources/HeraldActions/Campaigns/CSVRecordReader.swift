import Foundation

/// Reads a CSV file record by record in fixed-size chunks, so memory stays bounded for any size.
///
/// A record ends at a newline outside double quotes; its CR/LF is stripped. Each record comes with
/// the physical line it starts on (a quoted field may span lines).
struct CSVRecordReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    private var finished = false
    private var nextLine = 1
    static let chunkSize = 1 << 20

    init(path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        self.handle = handle
    }

    mutating func next() throws -> (line: Int, bytes: ArraySlice<UInt8>)? {
        var index = start
        var inQuotes = false
        var atFieldStart = true
        var newlines = 0
        while true {
            while index < buffer.count {
                let byte = buffer[index]
                // As in CSVLine: a quote opens a quoted field only at its start; elsewhere it is a literal.
                if byte == UInt8(ascii: "\"") && (inQuotes || atFieldStart) {
                    inQuotes.toggle()
                } else if byte == UInt8(ascii: "\n") {
                    if !inQuotes { return emit(upTo: index, newlines: newlines, consumed: index + 1) }
                    newlines += 1
                }
                atFieldStart = !inQuotes && byte == UInt8(ascii: ",")
                index += 1
            }
            if finished {
                guard start < buffer.count else { return nil }
                return emit(upTo: buffer.count, newlines: newlines, consumed: buffer.count)
            }
            // Keep the unfinished record, drop what was consumed, read on.
            buffer.removeFirst(start)
            index -= start
            start = 0
            let chunk = try handle.read(upToCount: Self.chunkSize) ?? Data()
            if chunk.isEmpty { finished = true } else { buffer.append(contentsOf: chunk) }
        }
    }

    private mutating func emit(upTo end: Int, newlines: Int, consumed: Int) -> (line: Int, bytes: ArraySlice<UInt8>) {
        var last = end
        if last > start, buffer[last - 1] == UInt8(ascii: "\r") { last -= 1 }
        let record = (nextLine, buffer[start..<last])
        nextLine += newlines + 1
        start = consumed
        return record
    }
}
