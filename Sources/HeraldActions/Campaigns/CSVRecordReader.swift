import Foundation

/// Reads a CSV file record by record in fixed-size chunks, so memory stays bounded for any size.
///
/// A leading UTF-8 byte order mark is skipped. A record ends at a CR, LF or CRLF outside double quotes
/// (inside quotes they are content) and comes with the physical line it starts on. A quoted field may span
/// lines, but only if its record completes properly — the quote closes before a comma or line end, within
/// ``maximumRecord`` bytes and with ``expectedFields`` fields; otherwise the quote is taken as unterminated:
/// only the record's first line comes back (``Defect/unterminatedQuote``) and reading restarts at the next
/// line, so one stray quote costs one row. A single line over ``maximumRecord`` bytes comes back cut to that
/// size as ``Defect/tooLong`` and the rest of it is skipped.
///
/// ```swift
/// var reader = try CSVRecordReader(path: "users.csv")
/// while let record = try reader.next() { print(record.line, record.defect?.reason ?? "ok") }
/// ```
struct CSVRecordReader {
    /// One record: its bytes without the line end, and why it is unusable, if it is.
    struct Record {
        var line: Int
        var bytes: ArraySlice<UInt8>
        var defect: Defect?
    }

    /// Why a record cannot be parsed; the reader has already moved past it.
    enum Defect: Equatable {
        case unterminatedQuote
        case tooLong

        var reason: String {
            switch self {
            case .unterminatedQuote: "unterminated quoted field"
            case .tooLong: "record too long: over \(CSVRecordReader.maximumRecord) bytes"
            }
        }
    }

    static let chunkSize = 1 << 20
    /// 128 KiB: room for a header of 256 names of 256 bytes, and a bound on how far a stray quote reaches.
    static let maximumRecord = 1 << 17
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The field count of a good record (the header's); a record spanning lines with another count is bad.
    var expectedFields: Int?
    private let handle: FileHandle
    private let chunkSize: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var finished = false
    private var nextLine = 1
    private var atFileStart = true
    /// The last record ended at a CR: an LF right after it belongs to that line end.
    private var skipLineFeed = false
    /// The last record was cut at ``maximumRecord``: the rest of its line is dropped.
    private var skippingLine = false

    init(path: String, chunkSize: Int = CSVRecordReader.chunkSize) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        self.handle = handle
        self.chunkSize = chunkSize
    }

    mutating func next() throws -> Record? {
        try skipSeparators()
        var scan = Scan()
        var index = start
        while true {
            while index < buffer.count {
                let byte = buffer[index]
                index += 1
                if let record = step(&scan, byte, at: index - 1) { return record }
            }
            if finished { return endOfFile(scan) }
            if index - start > Self.maximumRecord { return overflow(scan, scanned: index) }
            index -= try refill()
        }
    }

    /// Where the scan of one record stands.
    private struct Scan {
        enum State { case fieldStart, unquoted, quoted, closing }
        var state = State.fieldStart
        var fields = 1
        /// Line breaks inside quotes so far (a CRLF counts once).
        var newlines = 0
        /// The offset of the first of them from the record's start.
        var firstBreak = 0
    }

    /// Advances the scan by one byte; returns a record when the byte ends one.
    @inline(__always)
    private mutating func step(_ scan: inout Scan, _ byte: UInt8, at position: Int) -> Record? {
        switch scan.state {
        case .quoted:
            if byte == Byte.quote {
                scan.state = .closing
            } else if byte == Byte.lf || byte == Byte.cr {
                return lineBreakInQuotes(&scan, at: position)
            }
        case .closing:  // just after a quote inside a quoted field: an escaped quote, or the field's end
            if byte == Byte.quote {
                scan.state = .quoted
            } else if byte == Byte.comma {
                scan.state = .fieldStart
                scan.fields += 1
            } else if byte == Byte.lf || byte == Byte.cr {
                return endOfRecord(scan, at: position)
            } else if scan.newlines > 0 {
                return resync(scan)
            } else {
                scan.state = .unquoted  // `"a"b` on one line: CSVLine rejects it
            }
        case .fieldStart, .unquoted:
            if byte > Byte.comma {  // letters, digits, '@', '.', UTF-8: the common case
                scan.state = .unquoted
            } else if byte == Byte.comma {
                scan.state = .fieldStart
                scan.fields += 1
            } else if byte == Byte.lf || byte == Byte.cr {
                return endOfRecord(scan, at: position)
            } else {
                // As in CSVLine: a quote opens a quoted field only at its start; elsewhere it is a literal.
                scan.state = byte == Byte.quote && scan.state == .fieldStart ? .quoted : .unquoted
            }
        }
        return nil
    }

    private mutating func lineBreakInQuotes(_ scan: inout Scan, at position: Int) -> Record? {
        if buffer[position] == Byte.lf && buffer[position - 1] == Byte.cr { return nil }  // a CRLF counts once
        if position - start > Self.maximumRecord {
            if scan.newlines > 0 { return resync(scan) }
            skipLineFeed = buffer[position] == Byte.cr
            return emit(upTo: position, newlines: 0, consumed: position + 1)
        }
        if scan.newlines == 0 { scan.firstBreak = position - start }
        scan.newlines += 1
        return nil
    }

    private mutating func endOfRecord(_ scan: Scan, at end: Int) -> Record {
        if spansLinesBadly(scan, end: end) { return resync(scan) }
        skipLineFeed = buffer[end] == Byte.cr
        return emit(upTo: end, newlines: scan.newlines, consumed: end + 1)
    }

    private mutating func endOfFile(_ scan: Scan) -> Record? {
        guard start < buffer.count else { return nil }
        if spansLinesBadly(scan, end: buffer.count) { return resync(scan) }
        let defect: Defect? = scan.state == .quoted ? .unterminatedQuote : nil
        return emit(upTo: buffer.count, newlines: scan.newlines, consumed: buffer.count, defect: defect)
    }

    /// The record is past ``maximumRecord`` with no end in sight.
    private mutating func overflow(_ scan: Scan, scanned end: Int) -> Record {
        if scan.newlines > 0 { return resync(scan) }
        skippingLine = true
        return emit(upTo: end, newlines: 0, consumed: end)
    }

    private func spansLinesBadly(_ scan: Scan, end: Int) -> Bool {
        guard scan.newlines > 0 else { return false }
        let wrongFields = expectedFields.map { $0 != scan.fields } ?? false
        return scan.state == .quoted || wrongFields || end - start > Self.maximumRecord
    }

    /// Gives back the first line of a record that spans lines but cannot complete, and restarts after it.
    private mutating func resync(_ scan: Scan) -> Record {
        let end = start + scan.firstBreak
        skipLineFeed = buffer[end] == Byte.cr
        return emit(upTo: end, newlines: 0, consumed: end + 1, defect: .unterminatedQuote)
    }

    /// Hands out `start..<end` (cut to ``maximumRecord`` bytes, then ``Defect/tooLong``) and moves on.
    private mutating func emit(upTo end: Int, newlines: Int, consumed: Int, defect: Defect? = nil) -> Record {
        let tooLong = end - start > Self.maximumRecord
        let last = tooLong ? start + Self.maximumRecord : end
        let record = Record(line: nextLine, bytes: buffer[start..<last], defect: tooLong ? .tooLong : defect)
        nextLine += newlines + 1
        start = consumed
        return record
    }

    /// Skips what precedes the next record: the byte order mark, the rest of a cut line, a CRLF's LF.
    private mutating func skipSeparators() throws {
        if atFileStart {
            atFileStart = false
            while buffer.count - start < Self.byteOrderMark.count, !finished { _ = try refill() }
            if buffer[start...].starts(with: Self.byteOrderMark) { start += Self.byteOrderMark.count }
        }
        if skippingLine { try skipRestOfLine() }
        if skipLineFeed {
            skipLineFeed = false
            if start == buffer.count, !finished { _ = try refill() }
            if start < buffer.count, buffer[start] == Byte.lf { start += 1 }
        }
    }

    private mutating func skipRestOfLine() throws {
        skippingLine = false
        while true {
            if let end = buffer[start...].firstIndex(where: { $0 == Byte.lf || $0 == Byte.cr }) {
                skipLineFeed = buffer[end] == Byte.cr
                start = end + 1
                return
            }
            start = buffer.count
            if finished { return }
            _ = try refill()
        }
    }

    /// Drops the consumed bytes and appends the next chunk; returns how far the kept bytes moved.
    private mutating func refill() throws -> Int {
        let shift = start
        buffer.removeFirst(start)
        start = 0
        let chunk = try handle.read(upToCount: chunkSize) ?? Data()
        if chunk.isEmpty { finished = true } else { buffer.append(contentsOf: chunk) }
        return shift
    }

    private enum Byte {
        static let quote = UInt8(ascii: "\"")
        static let comma = UInt8(ascii: ",")
        static let lf = UInt8(ascii: "\n")
        static let cr = UInt8(ascii: "\r")
    }
}
