import Logging

/// `log.format: text`: swift-log's `StreamLogHandler` on standard error, with its metadata kept here and handed to it
/// only for a record that is written.
///
/// `StreamLogHandler` formats its whole metadata again each time a key is set. The HTTP server sets one per request
/// (its request id), so every request paid for that formatting though the level (`warning` by default) wrote nothing.
struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler
    var metadata: Logger.Metadata = [:]

    init(label: String) {
        stream = StreamLogHandler.standardError(label: label)
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var stream = stream
        stream.metadata = metadata
        stream.log(event: event)
    }
}
