import Foundation
import HeraldCore

/// The rules a claim applies: how many rows, how long the lease, when rows expire or die.
public struct ClaimPolicy: Sendable {
    public var limit: Int
    public var lease: TimeInterval
    public var maxAttempts: Int
    /// Queued mail older than this is expired, per action; absent actions never expire in the queue.
    public var maxQueueWait: [ActionKind: TimeInterval]
    /// Any mail still undelivered this long after it first became due is expired (Postfix's `maximal_queue_lifetime`).
    public var maxQueueLifetime: TimeInterval
    /// Code lifetime per action, counted from when the email is sent.
    public var lifetimes: [ActionKind: TimeInterval]

    /// How many of a connection's sends may be unrecorded at once (`worker.unrecordedPerConnection`): the most
    /// a crash can send twice per connection. A connection starts a send only while fewer of its earlier sends
    /// await recording, so a dead worker's first rows per connection, this many, are the only ones that may
    /// have been started. Each claim owner names its bound (`ClaimOwner`), so whoever returns a dead worker's
    /// rows applies that worker's bound.
    public var unrecordedPerConnection: Int
    /// How claimed mail gets codes to type (`policy.typedCodes`); nil when none does.
    public var typedCodes: TypedCodeMinting?

    public init(_ configuration: HeraldConfiguration) {
        limit = configuration.worker.batchSize
        unrecordedPerConnection = configuration.worker.unrecordedPerConnection
        lease = configuration.worker.lease
        maxAttempts = configuration.worker.maxAttempts
        maxQueueWait = configuration.worker.maxQueueWait
        maxQueueLifetime = configuration.worker.maxQueueLifetime
        lifetimes = configuration.links.lifetime
    }

    func lifetime(_ kind: ActionKind) -> TimeInterval { lifetimes[kind] ?? 3600 }
}

/// A row the worker owns until its lease ends, with the code minted for this attempt.
///
/// The plaintext code exists only here, in memory, and in the email built from it.
public struct ClaimedMessage: Sendable {
    public let message: OutboxMessage
    public let code: ActionCode
    let codeID: Int64
    public let claimedAt: Date
    /// The code to type mailed beside the link, when the mail carries one.
    public var typedCode: TypedCode? = nil
}

/// What a claim needs to give mail codes to type: the key they are hashed under, their shape, and the policy that
/// says which mail carries one when its request did not say.
public struct TypedCodeMinting: Sendable {
    public let key: TypedCodeKey
    public let policy: HeraldConfiguration.Policy

    public init(key: TypedCodeKey, policy: HeraldConfiguration.Policy) {
        self.key = key
        self.policy = policy
    }

    /// A fresh code and its hash for the ledger code `codeKey`, when `message` carries one.
    func mint(for message: OutboxMessage, codeKey: [UInt8]) -> (code: TypedCode, hash: [UInt8])? {
        guard TypedCodeRequest.carries(message.kind, request: message.settings.typedCode, policy: policy.typedCodes) else { return nil }
        let code = TypedCode.generate(length: policy.typedCodeLength, alphabet: policy.typedCodeAlphabet)
        return (code, key.hash(code.value, codeKey: codeKey))
    }
}

/// What one claim took off the queue.
public struct ClaimedBatch: Sendable {
    /// The rows to send, each with its code, in queue order.
    public var messages: [ClaimedMessage]
    /// The due rows the claim took, those it cancelled (a suppressed recipient) or failed (an unreadable row) on the
    /// spot included: fewer than the claim's limit means no more rows were due.
    public var taken: Int

    public init(messages: [ClaimedMessage], taken: Int) {
        self.messages = messages
        self.taken = taken
    }
}

/// The owner a claim names: `<worker id>/<connection>:<unrecorded bound>`.
///
/// The bound travels with the rows, so returning a dead worker's rows needs nothing but them. Owners written
/// before the bound was configurable (`<worker id>/<connection>`) had a bound of two.
public enum ClaimOwner {
    public static func name(worker: String, connection: Int, unrecorded: Int) -> String { "\(worker)/\(connection):\(unrecorded)" }

    /// The unrecorded bound an owner names.
    static func unrecorded(_ owner: String?) -> Int {
        guard let owner, let colon = owner.lastIndex(of: ":"), let bound = Int(owner[owner.index(after: colon)...]) else { return 2 }
        return bound
    }
}
