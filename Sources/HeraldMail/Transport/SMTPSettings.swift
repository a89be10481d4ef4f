import Foundation
import HeraldCore

/// The connection-level SMTP options a transport needs.
public struct SMTPSettings: Sendable {
    public var url: String
    public var requireStartTLS: Bool
    public var username: String
    public var password: String
    public var caFile: String
    public var insecure: Bool
    public var connectTimeout: TimeInterval
    public var timeout: TimeInterval
    /// How long the reply to a message's final dot may take (`smtp.dataTimeout`).
    public var dataTimeout: TimeInterval

    public init(_ smtp: HeraldConfiguration.SMTP) {
        url = smtp.url
        requireStartTLS = smtp.requireStartTLS
        username = smtp.username
        password = smtp.password
        caFile = smtp.caFile
        insecure = smtp.insecure
        connectTimeout = smtp.connectTimeout
        timeout = smtp.timeout
        dataTimeout = smtp.dataTimeout
    }
}
