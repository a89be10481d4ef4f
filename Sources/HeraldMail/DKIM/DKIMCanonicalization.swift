import Foundation

/// DKIM's "relaxed" canonicalization (RFC 6376 §3.4.2 and §3.4.4), on a message's bytes.
enum DKIMCanonicalization {
    /// One header field as it appears in the message: its name and everything after the colon up to (not
    /// including) the CRLF that ends it, folding included.
    struct Field {
        /// In lower case.
        var name: String
        var value: ArraySlice<UInt8>
    }

    /// Splits a message into its header fields and where its body starts (after the empty line; the end when
    /// there is none).
    static func split(_ message: [UInt8]) -> (fields: [Field], body: Int) {
        var fields: [Field] = []
        var start = 0
        var index = 0
        while index + 1 < message.count {
            guard message[index] == 13, message[index + 1] == 10 else {
                index += 1
                continue
            }
            let next = index + 2
            // A line starting with a space or a tab continues the field before it.
            if next < message.count, message[next] == 32 || message[next] == 9, start != index {
                index = next
                continue
            }
            if start == index { return (fields, next) }  // the empty line
            let line = message[start..<index]
            if let colon = line.firstIndex(of: 58) {
                let name = String(decoding: line[start..<colon], as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
                fields.append(Field(name: name, value: message[(colon + 1)..<index]))
            }
            start = next
            index = next
        }
        return (fields, message.count)
    }

    /// `name:value` with the name in lower case, the value unfolded, each run of spaces and tabs one space, and
    /// none around the colon or at the end; no CRLF.
    static func header(name: some Sequence<UInt8>, value: some Sequence<UInt8>, into out: inout [UInt8]) {
        for byte in name where byte != 32 && byte != 9 {
            out.append(byte >= 65 && byte <= 90 ? byte + 32 : byte)
        }
        out.append(58)
        var pendingSpace = false
        var started = false
        for byte in value {
            switch byte {
            case 13, 10: continue
            case 32, 9: pendingSpace = started
            default:
                if pendingSpace { out.append(32) }
                pendingSpace = false
                started = true
                out.append(byte)
            }
        }
    }

    /// The body with each run of spaces and tabs one space, none at a line's end, no empty lines at the end, and
    /// a final CRLF unless it is empty.
    static func body(_ body: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(body.count)
        var emptyLines = 0
        var line: [UInt8] = []
        line.reserveCapacity(1000)
        var pendingSpace = false
        func endLine() {
            if line.isEmpty {
                emptyLines += 1
            } else {
                for _ in 0..<emptyLines { out.append(contentsOf: [13, 10]) }
                emptyLines = 0
                out.append(contentsOf: line)
                out.append(contentsOf: [13, 10])
                line.removeAll(keepingCapacity: true)
            }
            pendingSpace = false
        }
        var index = body.startIndex
        while index < body.endIndex {
            let byte = body[index]
            if byte == 13, index + 1 < body.endIndex, body[index + 1] == 10 {
                endLine()
                index += 2
                continue
            }
            if byte == 32 || byte == 9 {
                pendingSpace = true
            } else {
                if pendingSpace { line.append(32) }
                pendingSpace = false
                line.append(byte)
            }
            index += 1
        }
        if !line.isEmpty { endLine() }
        return out
    }
}
