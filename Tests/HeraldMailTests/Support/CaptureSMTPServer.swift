import Foundation

/// The repository's scriptable aiosmtpd capture server (`Tests/support/smtp_server.py`), run as a
/// subprocess on a free port for one test.
final class CaptureSMTPServer {
    let port: Int
    let jsonl: URL
    private let process: Process
    let directory: URL

    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// A captured message: envelope and raw bytes.
    struct Received {
        let mailFrom: String
        let recipients: [String]
        let authUser: String?
        let tls: Bool
        let session: Int
        let raw: [UInt8]
        var text: String { String(decoding: raw, as: UTF8.self) }
    }

    init(_ arguments: [String] = []) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-smtp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        jsonl = directory.appendingPathComponent("received.jsonl")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            [
                "python3", Self.repositoryRoot.appendingPathComponent("Tests/support/smtp_server.py").path,
                "--port", "0", "--jsonl", jsonl.path, "--lifetime", "300",
            ] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = [UInt8]()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { throw ServerError.didNotStart }
            if first == UInt8(ascii: "\n") { break }
            line.append(first)
        }
        let ready = String(decoding: line, as: UTF8.self)
        guard ready.hasPrefix("READY "), let port = Int(ready.dropFirst(6)) else { throw ServerError.didNotStart }
        self.port = port
    }

    /// A TLS certificate and key for `localhost`, made by `Tests/support/make_cert.py`.
    static func makeCertificate(in directory: URL) throws -> (cert: String, key: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", repositoryRoot.appendingPathComponent("Tests/support/make_cert.py").path, directory.path]
        try process.run()
        process.waitUntilExit()
        return (directory.appendingPathComponent("cert.pem").path, directory.appendingPathComponent("key.pem").path)
    }

    var url: String { "smtp://127.0.0.1:\(port)/herald.test" }

    func received() throws -> [Received] {
        guard let data = FileManager.default.contents(atPath: jsonl.path) else { return [] }
        return try String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            return Received(
                mailFrom: object["mail_from"] as! String, recipients: object["rcpt_tos"] as! [String],
                authUser: object["auth_user"] as? String, tls: object["tls"] as! Bool, session: object["session"] as! Int,
                raw: Array(Data(base64Encoded: object["data_b64"] as! String)!))
        }
    }

    deinit {
        let pid = process.processIdentifier
        kill(pid, SIGKILL)  // the server holds no state worth a graceful stop
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        try? FileManager.default.removeItem(at: directory)
    }

    enum ServerError: Error { case didNotStart }
}
