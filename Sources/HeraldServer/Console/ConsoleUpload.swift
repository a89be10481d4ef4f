import Foundation
import HeraldActions
import HeraldCore
import Hummingbird
import MultipartKit
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The CSRF check of the console's multipart form (`ConsoleAuthMiddleware`): the handler asks it with the form's
/// first field before it keeps anything, and answers the refusal it gets, if any.
final class ConsoleUploadGate: Sendable {
    private let check: @Sendable (String?) async -> Response?
    private let passed = Mutex(false)

    init(_ check: @escaping @Sendable (String?) async -> Response?) { self.check = check }

    /// Nil when `csrf` is the session's token and the session may change things; else the page to answer.
    func admit(_ csrf: String?) async -> Response? {
        let refusal = await check(csrf)
        if refusal == nil { passed.withLock { $0 = true } }
        return refusal
    }

    /// Whether the handler was let through: only then is what it did written to the action log by the middleware.
    var admitted: Bool { passed.withLock { $0 } }
}

/// Reads the new-campaign form from its `multipart/form-data` stream, never holding the whole body: the `csrf`
/// field must come first and pass the gate before anything else is kept, text fields are bounded, and the one file
/// part is written as it arrives to a new file in `directory` (mode 0600, a random name), bounded by `maxFileBytes`.
struct ConsoleUpload {
    /// The form's fields, and its file as kept on disk.
    struct Form {
        var fields: [String: String] = [:]
        /// The recipients file; nil when none was chosen or it was empty (nothing is kept then).
        var file: UploadedFile?
        /// Whether the form had its file part (a browser sends one without a file name when none was chosen).
        var hadFilePart = false
        /// Whether a file was chosen: the file part has a file name.
        var chosenFile = false
    }

    /// How reading ended: the form, or what to answer instead (nothing of the upload is kept then).
    enum Outcome {
        case form(Form)
        /// The gate's refusal.
        case refused(Response)
        /// One line for a `413` page.
        case tooLarge(String)
        /// One line for a `400` page.
        case malformed(String)
        /// One line for a `503` page: the upload could not be kept (a full disk, a directory Herald may not write).
        case unavailable(String)
    }

    /// The file part's field name.
    static let fileField = "recipients"
    /// Bytes of one text field; the form's fields are short (a name, a URL, a rate).
    static let maximumField = 2048
    static let maximumParts = 16
    static let maximumHeaders = 16
    /// Bytes of the body beyond the file: boundaries, part headers and the text fields.
    static let formAllowance = maximumParts * (maximumField + 1024)

    let directory: String
    let maxFileBytes: Int

    /// The boundary of a `multipart/form-data` request; nil for any other body.
    static func boundary(of request: Request) -> String? {
        guard let type = request.headers[.contentType] else { return nil }
        let parameters = type.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parameters.first?.lowercased() == "multipart/form-data" else { return nil }
        for parameter in parameters.dropFirst() where parameter.lowercased().hasPrefix("boundary=") {
            var value = Substring(parameter.dropFirst("boundary=".count))
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = value.dropFirst().dropLast() }
            return (1...70).contains(value.utf8.count) ? String(value) : nil
        }
        return nil
    }

    /// Streams `request`'s body through the multipart parser. On any outcome but `.form` the file is removed.
    func read(_ request: Request, gate: ConsoleUploadGate) async throws -> Outcome {
        guard let boundary = Self.boundary(of: request) else { return .malformed("The form must be sent as multipart/form-data.") }
        let parser = MultipartParser(boundary: boundary)
        let events = PartEvents()
        parser.onHeader = { name, value in events.list.append(.header(name, value)) }
        parser.onBody = { buffer in events.list.append(.body(buffer)) }
        parser.onPartComplete = { events.list.append(.end) }
        var reading = Reading(upload: self, gate: gate)
        let outcome = await reading.run(request.body, parser: parser, events: events)
        if case .form = outcome { return outcome }
        await reading.discard()
        return outcome
    }

    /// The parser's callbacks, collected per chunk and handled in order after it.
    private final class PartEvents {
        enum Event {
            case header(String, String)
            case body(ByteBuffer)
            case end
        }

        var list: [Event] = []

        func take() -> [Event] {
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
    }

    /// One part as it is read.
    private struct Part {
        var name: String?
        var fileName: String?
        var text: [UInt8] = []
        var headers = 0
        var started = false
        var file: UploadedFile?
        var bytes = 0
    }

    /// The state of one read.
    private struct Reading {
        let upload: ConsoleUpload
        let gate: ConsoleUploadGate
        var form = Form()
        var part = Part()
        var parts = 0
        var admitted = false

        mutating func run(_ body: RequestBody, parser: MultipartParser, events: PartEvents) async -> Outcome {
            var total = 0
            do {
                for try await chunk in body {
                    total += chunk.readableBytes
                    if !admitted, total > ConsoleForm.limit { return await refuse() }
                    if total > upload.maxFileBytes + ConsoleUpload.formAllowance { return tooLarge }
                    do {
                        try parser.execute(chunk)
                    } catch {
                        return admitted ? .malformed("The upload is not a well-formed multipart form.") : await refuse()
                    }
                    for event in events.take() {
                        if let stop = await handle(event) { return stop }
                    }
                }
            } catch {
                return .malformed("The upload was cut short.")
            }
            guard admitted else { return await refuse() }
            guard !part.started else { return .malformed("The upload ended before the form was complete.") }
            return .form(form)
        }

        /// The answer to a form whose first field is not the session's token.
        private func refuse() async -> Outcome {
            .refused(await gate.admit(nil) ?? ConsoleAuthMiddleware.expired)
        }

        private var tooLarge: Outcome {
            let limit = upload.maxFileBytes
            let size = limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : limit % 1024 == 0 ? "\(limit >> 10) KiB" : "\(limit) bytes"
            return .tooLarge("The recipients file is larger than \(size), the most one upload may hold.")
        }

        /// Handles one parser event; an outcome ends the read.
        private mutating func handle(_ event: PartEvents.Event) async -> Outcome? {
            part.started = true
            switch event {
            case .header(let name, let value):
                part.headers += 1
                guard part.headers <= ConsoleUpload.maximumHeaders else { return .malformed("A part of the form has too many headers.") }
                if name.lowercased() == "content-disposition" {
                    let parameters = Self.dispositionParameters(value)
                    part.name = parameters["name"]
                    part.fileName = parameters["filename"]
                }
                return nil
            case .body(let buffer):
                return await body(buffer)
            case .end:
                return await end()
            }
        }

        private mutating func body(_ buffer: ByteBuffer) async -> Outcome? {
            guard admitted else {
                // Before the gate: only the csrf field is read, and only so far.
                guard part.name == "csrf", part.text.count + buffer.readableBytes <= 256 else { return await refuse() }
                part.text += buffer.readableBytesView
                return nil
            }
            guard part.fileName != nil, part.name == ConsoleUpload.fileField else {
                guard part.text.count + buffer.readableBytes <= ConsoleUpload.maximumField else {
                    return .tooLarge("The field '\(part.name ?? "")' is longer than \(ConsoleUpload.maximumField) bytes.")
                }
                part.text += buffer.readableBytesView
                return nil
            }
            guard !form.hadFilePart else { return .malformed("Upload one recipients file.") }
            part.bytes += buffer.readableBytes
            guard part.bytes <= upload.maxFileBytes else { return tooLarge }
            do {
                if part.file == nil { part.file = try await UploadedFile.create(in: upload.directory) }
                if let file = part.file { try await offload { try file.append(buffer) } }
            } catch {
                return .unavailable("The upload could not be kept: \((error as? HeraldError)?.detail ?? "\(error)").")
            }
            return nil
        }

        private mutating func end() async -> Outcome? {
            defer { part = Part() }
            parts += 1
            guard parts <= ConsoleUpload.maximumParts else { return .malformed("The form has too many fields.") }
            guard admitted else {
                let csrf = part.name == "csrf" ? String(decoding: part.text, as: UTF8.self) : nil
                if let refusal = await gate.admit(csrf) { return .refused(refusal) }
                admitted = true
                return nil
            }
            if part.fileName != nil, part.name == ConsoleUpload.fileField {
                guard !form.hadFilePart else { return .malformed("Upload one recipients file.") }
                form.hadFilePart = true
                form.chosenFile = !(part.fileName ?? "").isEmpty
                part.file?.finish()
                form.file = part.file
                return nil
            }
            guard let name = part.name else { return nil }
            guard let text = String(validating: part.text, as: UTF8.self) else {
                return .malformed("The field '\(name)' is not UTF-8 text.")
            }
            form.fields[name] = text
            return nil
        }

        /// Removes what was kept of a refused or failed upload.
        func discard() async {
            for file in [part.file, form.file].compactMap({ $0 }) {
                file.finish()
                _ = try? await offload { file.remove() }
            }
        }

        /// `name` and `filename` of a `Content-Disposition: form-data; name="…"; filename="…"` value.
        static func dispositionParameters(_ value: String) -> [String: String] {
            var parameters: [String: String] = [:]
            var rest = Substring(value)
            while let semicolon = rest.firstIndex(of: ";") {
                rest = rest[rest.index(after: semicolon)...].drop { $0 == " " || $0 == "\t" }
                guard let equals = rest.firstIndex(of: "=") else { break }
                let key = rest[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                rest = rest[rest.index(after: equals)...]
                var value = ""
                if rest.first == "\"" {
                    rest = rest.dropFirst()
                    var escaped = false
                    while let character = rest.first {
                        rest = rest.dropFirst()
                        if escaped {
                            value.append(character)
                            escaped = false
                        } else if character == "\\" {
                            escaped = true
                        } else if character == "\"" {
                            break
                        } else {
                            value.append(character)
                        }
                    }
                } else {
                    let end = rest.firstIndex(of: ";") ?? rest.endIndex
                    value = rest[..<end].trimmingCharacters(in: .whitespaces)
                    rest = rest[end...]
                }
                parameters[key] = value
            }
            return parameters
        }
    }
}

/// An uploaded file as it is written: created new with mode 0600 under a random name.
final class UploadedFile: Sendable {
    let path: String
    private let descriptor: Mutex<Int32>

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = Mutex(descriptor)
    }

    /// A new file in `directory` (created with mode 0700 if missing).
    static func create(in directory: String) async throws -> UploadedFile {
        try await offload {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw HeraldError(.unavailable, "cannot create the upload directory")
            }
            let path = "\(directory)/upload-\(ConsoleSessions.randomToken()).csv"
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw HeraldError(.unavailable, "cannot create an upload file") }
            return UploadedFile(path: path, descriptor: descriptor)
        }
    }

    /// Appends `buffer`. Blocking: call it through `offload`.
    func append(_ buffer: ByteBuffer) throws {
        try descriptor.withLock { descriptor in
            var rest = buffer
            while rest.readableBytes > 0 {
                let written = rest.withUnsafeReadableBytes { write(descriptor, $0.baseAddress, $0.count) }
                guard written > 0 else { throw HeraldError(.unavailable, "cannot write the upload: \(String(cString: strerror(errno)))") }
                rest.moveReaderIndex(forwardBy: written)
            }
        }
    }

    /// Closes the file (once).
    func finish() {
        descriptor.withLock { descriptor in
            if descriptor >= 0 { _ = close(descriptor) }
            descriptor = -1
        }
    }

    func remove() { unlink(path) }
}
