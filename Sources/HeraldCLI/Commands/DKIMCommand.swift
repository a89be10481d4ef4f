import ArgumentParser
import Foundation
import HeraldCore
import HeraldMail

/// `herald dkim`: the keys that sign outgoing mail (`dkim.*`) and the DNS records that publish them.
struct DKIMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dkim", abstract: "Make DKIM keys and print the DNS records to publish.", subcommands: [DKIMKeygen.self, DKIMRecords.self])
}

/// `herald dkim keygen`: writes a new private key (mode 0600, never over an existing file) and prints its record.
struct DKIMKeygen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Write a new DKIM private key and print the DNS TXT record to publish for it.",
        discussion: "Name the file in dkim.rsaKeyFile (or dkim.ed25519KeyFile) and publish the record before setting dkim.domain.")

    @Option(help: "The signing domain (d=), the From address's domain or a parent of it.") var domain: String
    @Option(help: "The selector (s=): the record goes at <selector>._domainkey.<domain>.") var selector = "herald"
    @Option(help: "rsa (rsa-sha256) or ed25519 (ed25519-sha256, RFC 8463).") var algorithm = "rsa"
    @Option(help: "RSA key size: 2048, 3072 or 4096.") var bits = 2048
    @Option(help: "Where to write the PEM private key; the file must not exist.") var out: String

    func run() async throws {
        try await reportingErrors {
            guard let kind = DKIMKey.Algorithm(rawValue: algorithm) else {
                throw HeraldError(.argumentError, "--algorithm must be rsa or ed25519, not '\(algorithm)'")
            }
            guard Hostname.isValid(domain.lowercased()) else { throw HeraldError(.argumentError, "--domain '\(domain)' is not a domain name") }
            let key = try DKIMKey.generate(kind, bits: bits, selector: selector)
            try writeNew(out, key.pemRepresentation)
            print("; \(kind.rawValue) key written to \(out); publish this record:")
            print(key.dnsRecord(domain: domain.lowercased()))
        }
    }

    /// Creates `path` with mode 0600 and writes `text`; refuses to replace a file.
    private func writeNew(_ path: String, _ text: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = errno == EEXIST ? "the file exists (a key is never overwritten)" : String(cString: strerror(errno))
            throw HeraldError(.argumentError, "cannot write \(path): \(reason)")
        }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(descriptor) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(path)  // no half key left behind to be refused as existing next time
            throw HeraldError(.argumentError, "cannot write \(path): \(reason)")
        }
    }
}

/// `herald dkim records`: the records of the configured keys, to publish or to compare with DNS.
struct DKIMRecords: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "records", abstract: "Print the DNS TXT records of the configured DKIM keys.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            guard let signer = try DKIMSigner(configuration: runtime.configuration.dkim) else {
                throw HeraldError(.argumentError, "DKIM is off: set dkim.domain and dkim.rsaKeyFile")
            }
            for key in signer.keys { print(key.dnsRecord(domain: signer.domain)) }
        }
    }
}
