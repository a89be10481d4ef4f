import Foundation
import HeraldCore

/// The rejects file: CSV with `line,reason,content`.
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
        pending.append(contentsOf: "\(line),\(Self.quote(reason)),\(Self.quote(content))\n".utf8)
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

    private static func quote(_ value: String) -> String {
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
