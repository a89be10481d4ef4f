import NIOCore

/// One line from a mail client, without its CRLF or bare LF ending.
///
/// A line longer than `MailLineDecoder.fragmentLength` arrives as fragments (`isComplete` false) followed by
/// its complete tail, so neither a command nor a message line can make the decoder buffer without bound.
struct MailLine: Sendable {
    var bytes: ByteBuffer
    var isComplete: Bool
}

/// Splits the byte stream into `MailLine`s, accepting CRLF and bare LF endings.
struct MailLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = MailLine

    /// RFC 5321's limit on a text line, its CRLF included; longer lines are passed on in pieces of this size.
    static let fragmentLength = 1000

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let line = Self.nextLine(&buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(line))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last line without its ending is dropped: the client has gone before finishing a command or a message.
        try decode(context: context, buffer: &buffer)
    }

    /// Takes the next complete line or fragment off `buffer`, or nil if more bytes are needed.
    static func nextLine(_ buffer: inout ByteBuffer) -> MailLine? {
        let view = buffer.readableBytesView
        if let newline = view.firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - view.startIndex
            let hasCarriageReturn = length > 0 && view[newline - 1] == UInt8(ascii: "\r")
            let content = hasCarriageReturn ? length - 1 : length
            guard let bytes = buffer.readSlice(length: content) else { return nil }
            buffer.moveReaderIndex(forwardBy: length - content + 1)
            return MailLine(bytes: bytes, isComplete: true)
        }
        guard view.count >= fragmentLength else { return nil }
        // Hold back a final CR: it may be the first half of the CRLF that ends this line.
        let lastIndex = view.startIndex + fragmentLength - 1
        let length = view[lastIndex] == UInt8(ascii: "\r") ? fragmentLength - 1 : fragmentLength
        guard let bytes = buffer.readSlice(length: length) else { return nil }
        return MailLine(bytes: bytes, isComplete: false)
    }
}
