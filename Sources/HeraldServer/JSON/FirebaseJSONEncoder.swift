import Foundation
import Hummingbird

/// Encodes answers as Firebase writes them: sorted keys, unescaped slashes, nil fields left out, never cached.
struct FirebaseJSONEncoder: ResponseEncoder {
    func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws -> Response {
        try Self.response(value)
    }

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try json(value)
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The JSON text of `value`.
    static func json(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }
}
