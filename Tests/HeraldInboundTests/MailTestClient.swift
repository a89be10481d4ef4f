import NIOCore
import NIOPosix
import Testing

@testable import HeraldInbound

/// A line-reading LMTP/SMTP client over real TCP.
struct MailTestClient {
    private var lines: NIOAsyncChannelInboundStream<MailLine>.AsyncIterator
    private let writer: NIOAsyncChannelOutboundWriter<ByteBuffer>

    static func connect(port: Int, _ body: (inout MailTestClient) async throws -> Void) async throws {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(MailLineDecoder()))
                    return try NIOAsyncChannel<MailLine, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            var client = MailTestClient(lines: inbound.makeAsyncIterator(), writer: outbound)
            try await body(&client)
        }
    }

    func send(_ text: String) async throws {
        try await writer.write(ByteBuffer(string: text))
    }

    /// The next reply, its lines joined by "\n"; nil once the server has closed the connection.
    mutating func reply() async throws -> String? {
        var text: [String] = []
        while let line = try await lines.next() {
            let content = String(buffer: line.bytes)
            text.append(content)
            if content.dropFirst(3).first != "-" { break }
        }
        return text.isEmpty ? nil : text.joined(separator: "\n")
    }

    mutating func expect(
        _ expected: String, after command: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        if let command { try await send(command + "\r\n") }
        let reply = try await reply()
        #expect(reply == expected, sourceLocation: sourceLocation)
    }

    mutating func expectClosed(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let reply = try await reply()
        #expect(reply == nil, sourceLocation: sourceLocation)
    }

    /// Reads the greeting (unless already read) and says LHLO.
    mutating func greet(size: Int = 10 << 20, expectingGreeting: Bool = true) async throws {
        if expectingGreeting { try await expect("220 mx.herald.test LMTP Herald") }
        let reply = try await reply(after: "LHLO postfix.test")
        #expect(reply?.hasSuffix("250 SIZE \(size)") == true)
    }

    private mutating func reply(after command: String) async throws -> String? {
        try await send(command + "\r\n")
        return try await reply()
    }
}
