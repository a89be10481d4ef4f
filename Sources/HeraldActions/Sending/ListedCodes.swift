import Foundation
import HeraldCore
import HeraldStore
import Synchronization

/// Codes minted without mail, with their links: an admin's `returnOobLink`, and every code in emulator mode,
/// where the newest `emulatorCodeLimit` are also listed in memory (never on disk) for `GET …/oobCodes`.
final class ListedCodes: Sendable {
    let store: any HeraldStore
    let links: ActionLinkBuilder
    /// How long each action's code lives (`links.lifetime`).
    let lifetime: [ActionKind: TimeInterval]
    let emulatorMode: Bool
    let emulatorCodes = Mutex<[EmulatorCode]>([])
    static let emulatorCodeLimit = 1000

    init(store: any HeraldStore, links: ActionLinkBuilder, configuration: HeraldConfiguration) {
        self.store = store
        self.links = links
        lifetime = configuration.links.lifetime
        emulatorMode = configuration.server.emulatorMode
    }

    /// Mints a code for `action` and builds its link, without mail: admin `returnOobLink`, and every code in
    /// emulator mode (where it is also listed, in memory only).
    func mintListedCode(_ action: ActionRequest, now: Date) throws -> (code: String, link: String) {
        let lifetime = self.lifetime[action.kind] ?? 3600
        let email = action.email.value
        let code = try store.mintCode(
            action.kind, email: email, newEmail: action.newEmail?.value, continueURL: action.settings.url, lifetime: lifetime, now: now)
        let link = links.link(for: action.kind, code: code.plaintext, settings: action.settings, lang: action.locale.value)
        if emulatorMode {
            let entry = EmulatorCode(
                email: email, newEmail: action.newEmail?.value, oobCode: code.plaintext, oobLink: link, requestType: action.kind.requestType)
            emulatorCodes.withLock { codes in
                codes.append(entry)
                if codes.count > Self.emulatorCodeLimit { codes.removeFirst(codes.count - Self.emulatorCodeLimit) }
            }
        }
        return (code.plaintext, link)
    }

    /// Emulator mode: a used code leaves the listing, as the emulator's does.
    func forgetEmulatorCode(_ code: String) {
        guard emulatorMode else { return }
        emulatorCodes.withLock { codes in codes.removeAll { $0.oobCode == code } }
    }

    /// The codes minted in emulator mode, oldest first.
    var emulatedCodes: [EmulatorCode] { emulatorCodes.withLock { $0 } }
}

/// A code minted in emulator mode, as `GET /emulator/v1/projects/{p}/oobCodes` lists it.
public struct EmulatorCode: Sendable, Hashable {
    public let email: String
    public let newEmail: String?
    public let oobCode: String
    public let oobLink: String
    public let requestType: String
}
