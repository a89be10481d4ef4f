import CZlib
import Foundation
import HeraldCore

/// The message archive (`ledger.archive`): before message retention deletes a message, its audit row is appended to
/// a gzip file of JSON lines in this directory, so `herald audit --archive` can still say whether a pruned link was
/// sent, clicked and redeemed.
///
/// Each sweep of each worker writes its own file (`herald-archive-<UTC start>-<worker>.jsonl.gz`); each prune step
/// appends one complete gzip member to it, synced to disk before the step's deletes commit. `zcat`, `gzip -d` and
/// every gzip library read the members as one stream. A step whose append fails deletes nothing, and the file is cut
/// back to its last whole member; a crash between the sync and the commit archives that step's rows again on the
/// next sweep, so a message can appear twice, with the same `id`.
public struct LedgerArchive: Sendable {
    public let directory: String

    /// The archive in `directory`, created if missing; throws `invalidConfiguration` when it cannot be written to.
    public init(directory: String) throws {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw HeraldError(.invalidConfiguration, "ledger.archive: cannot create the directory \(directory): \(error.localizedDescription)")
        }
        guard access(directory, W_OK | X_OK) == 0 else {
            throw HeraldError(.invalidConfiguration, "ledger.archive: the directory \(directory) is not writable by this process")
        }
    }

    /// The archive `ledger.archive` names, nil when it names none.
    public init?(_ ledger: HeraldConfiguration.Ledger) throws {
        guard !ledger.archive.isEmpty else { return nil }
        try self.init(directory: ledger.archive)
    }

    /// Why an archive file could not take a step's rows.
    public struct WriteFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The file a sweep that began at `began` on worker `worker` appends to: a name not taken yet (`-2`, `-3`, … after
    /// the worker when one is, as after a failed append).
    public func file(began: Date, worker: String) -> File {
        let stamp = began.iso8601.replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")
        var name = "herald-archive-\(stamp)-\(worker)"
        var number = 1
        while FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent(name + ".jsonl.gz")) {
            number += 1
            name = "herald-archive-\(stamp)-\(worker)-\(number)"
        }
        return File(path: (directory as NSString).appendingPathComponent(name + ".jsonl.gz"))
    }

    /// One archive file.
    public struct File: Sendable {
        public let path: String

        /// Appends `rows` as one gzip member of JSON lines and syncs it; on failure the file is as it was and the
        /// error (`WriteFailure`) says why.
        public func append(_ rows: [AuditRow]) throws {
            guard !rows.isEmpty else { return }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var lines = Data()
            for row in rows {
                lines.append(try encoder.encode(row))
                lines.append(10)
            }
            let member = try LedgerArchive.gzip(lines)
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
            guard descriptor >= 0 else { throw failure("cannot open") }
            defer { close(descriptor) }
            let before = lseek(descriptor, 0, SEEK_END)
            let written = member.withUnsafeBytes { bytes -> Bool in
                var offset = 0
                while offset < bytes.count {
                    let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { return false }
                    offset += count
                }
                return true
            }
            guard written, fsync(descriptor) == 0 else {
                let problem = failure("cannot write to")
                // A file this append made goes again (a full disk leaves no empty files behind, one per retry).
                if before == 0 { unlink(path) } else { _ = ftruncate(descriptor, before) }
                throw problem
            }
            if before == 0 { Self.syncDirectory(of: path) }
        }

        private func failure(_ what: String) -> WriteFailure {
            WriteFailure(description: "the message archive \(what) \(path): \(String(cString: strerror(errno)))")
        }

        /// A new file's name survives a crash only once its directory is synced.
        private static func syncDirectory(of path: String) {
            let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard directory >= 0 else { return }
            _ = fsync(directory)
            close(directory)
        }
    }

    /// A decoding error in one line: what is wrong, and under which key.
    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context), .dataCorrupted(let context):
            let key = context.codingPath.map(\.stringValue).joined(separator: ".")
            return key.isEmpty ? context.debugDescription : "\(key): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    /// `data` as one gzip member.
    static func gzip(_ data: Data) throws -> Data {
        var stream = z_stream()
        guard czlib_deflate_init_gzip(&stream, 6) == Z_OK else { throw HeraldError(.unavailable, "zlib could not start a gzip stream") }
        defer { deflateEnd(&stream) }
        var output = Data(count: Int(deflateBound(&stream, uLong(data.count))) + 32)
        let result = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out -> (Int32, Int) in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(out.count)
                return (deflate(&stream, Z_FINISH), Int(stream.total_out))
            }
        }
        guard result.0 == Z_STREAM_END else { throw HeraldError(.unavailable, "zlib could not compress the archive's lines") }
        output.count = result.1
        return output
    }
}

extension LedgerArchive {
    /// The archive files at `path`: the file itself, or a directory's `*.jsonl.gz` files in name order (the order
    /// their sweeps began).
    public static func files(at path: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw HeraldError(.argumentError, "--archive: \(path) does not exist")
        }
        guard isDirectory.boolValue else { return [path] }
        let names = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".jsonl.gz") }.sorted()
        return names.map { (path as NSString).appendingPathComponent($0) }
    }

    /// Streams the rows of the archive file at `path` to `each`, in the order they were archived, a line at a time.
    /// A file that ends inside a gzip member (a crash while a step was appending, before its deletes) ends there,
    /// and `warn` says so; a line that is not an audit row throws, naming the file and line.
    public static func read(_ path: String, warn: (String) -> Void, each: (AuditRow) throws -> Void) throws {
        guard let file = gzopen(path, "rb") else {
            throw HeraldError(.argumentError, "--archive: cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { gzclose(file) }
        let decoder = JSONDecoder()
        var pending = Data()
        var lineNumber = 0
        var chunk = [CChar](repeating: 0, count: 1 << 16)
        func emit(_ line: Data) throws {
            lineNumber += 1
            guard !line.isEmpty else { return }
            do {
                try each(try decoder.decode(AuditRow.self, from: line))
            } catch let error as DecodingError {
                throw HeraldError(.argumentError, "--archive: \(path) line \(lineNumber) is not an archived message: \(Self.describe(error))")
            }
        }
        // A line at a time (`gzgets`), so that the lines before a damaged member are read: `gzread` drops what it
        // had inflated in the call that met the damage.
        while true {
            let read = chunk.withUnsafeMutableBufferPointer { gzgets(file, $0.baseAddress, Int32($0.count)) != nil }
            guard read else {
                // zlib ends a stream cut inside a member as at its end, with Z_BUF_ERROR kept for gzerror.
                var code: Int32 = 0
                let message = String(cString: gzerror(file, &code))
                if code == Z_BUF_ERROR {
                    warn("\(path) ends inside a gzip member (a prune was cut off while archiving); the lines before it were read")
                    pending.removeAll()
                } else if code != Z_OK {
                    warn("\(path) is damaged after line \(lineNumber) (\(message)); the lines before it were read")
                    pending.removeAll()
                }
                break
            }
            chunk.withUnsafeBufferPointer { line in
                pending.append(contentsOf: UnsafeRawBufferPointer(start: line.baseAddress, count: strlen(line.baseAddress!)))
            }
            if pending.last == 10 {
                try emit(pending.dropLast())
                pending.removeAll(keepingCapacity: true)
            }
        }
        if !pending.isEmpty { try emit(pending) }
    }
}
