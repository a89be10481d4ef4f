import Foundation
import HeraldCore
import Logging
import Synchronization

/// `log.format: json`: each record one JSON object on one line of standard error, with the keys `time`
/// (ISO 8601, UTC, milliseconds), `level`, `label`, `message` and `metadata` (an object, `{}` when empty),
/// always in that order.
///
/// ```json
/// {"time":"2026-11-22T07:32:00.125Z","level":"info","label":"herald","message":"worker started","metadata":{"connections":"1"}}
/// ```
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        if let error = event.error, merged["error"] == nil { merged["error"] = "\(error)" }
        Self.standardError(Self.line(time: Date(), level: event.level, label: label, message: event.message.description, metadata: merged))
    }

    /// One record as a line of JSON, ending in a newline.
    static func line(time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        var line = "{\"time\":"
        appendString(time.formatted(timeFormat), to: &line)
        line += ",\"level\":"
        appendString(level.rawValue, to: &line)
        line += ",\"label\":"
        appendString(label, to: &line)
        line += ",\"message\":"
        appendString(message, to: &line)
        line += ",\"metadata\":"
        appendValue(.dictionary(metadata), to: &line)
        line += "}\n"
        return line
    }

    private static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)

    private static func appendValue(_ value: Logger.Metadata.Value, to line: inout String) {
        switch value {
        case .string(let text):
            appendString(text, to: &line)
        case .stringConvertible(let convertible):
            appendString(convertible.description, to: &line)
        case .array(let values):
            line += "["
            for (index, value) in values.enumerated() {
                if index > 0 { line += "," }
                appendValue(value, to: &line)
            }
            line += "]"
        case .dictionary(let dictionary):
            line += "{"
            for (index, key) in dictionary.keys.sorted().enumerated() {
                if index > 0 { line += "," }
                appendString(key, to: &line)
                line += ":"
                appendValue(dictionary[key]!, to: &line)
            }
            line += "}"
        }
    }

    private static func appendString(_ text: String, to line: inout String) { JSONText.append(text, to: &line) }

    /// Lines from every thread, whole: one write each, under one lock.
    private static let output = Mutex(())

    static func standardError(_ line: String) {
        output.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
    }
}
