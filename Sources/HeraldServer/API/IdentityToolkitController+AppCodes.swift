import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// Codes for an app that owns its accounts (`accounts.owner: app`): Herald verifies, consumes and
/// records; the app applies the effect. Admin calls only.
extension IdentityToolkitController {
    /// `codes:inspect`: what a usable code is for and when it expires, without consuming it.
    @Sendable func inspectForApp(_ request: Request, context: HeraldRequestContext) async throws -> AppCodeReply {
        try context.requireAdmin()
        let body = try await request.decode(as: InspectCodeBody.self, context: context)
        let visitor = context.visitor(of: request)
        let code = try await offload { try redemption.inspect(code: body.oobCode, visitor: visitor) }
        return AppCodeReply(code, expiresAt: code.expiresAt.iso8601)
    }

    /// `codes:redeem`: consumes a code for the app; the visitor is the app's user when the body names them.
    @Sendable func redeemForApp(_ request: Request, context: HeraldRequestContext) async throws -> AppCodeReply {
        try context.requireAdmin()
        let body = try await request.decode(as: RedeemCodeBody.self, context: context)
        let caller = context.visitor(of: request)
        let visitor = Visitor(ip: body.ip ?? caller.ip, userAgent: body.userAgent ?? caller.userAgent)
        let code = try await offload { try redemption.redeemForApp(code: body.oobCode, visitor: visitor) }
        return AppCodeReply(code)
    }
}

/// `codes:inspect`'s body.
struct InspectCodeBody: StrictDecodable {
    let oobCode: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case oobCode }
}

/// `codes:redeem`'s body: the code, and who used the link (the app's user, not the app's server).
struct RedeemCodeBody: StrictDecodable {
    let oobCode: String?
    let ip: String?
    let userAgent: String?

    enum CodingKeys: String, CodingKey, CaseIterable { case oobCode, ip, userAgent }
}

/// What a code is for: `codes:inspect`'s and `codes:redeem`'s answer.
struct AppCodeReply: ResponseEncodable {
    let requestType: String
    let email: String
    let newEmail: String?
    let continueUrl: String?
    /// The campaign's id, as text.
    let campaignId: String?
    /// ISO 8601; `codes:inspect` only.
    let expiresAt: String?

    init(_ code: CodeInfo, expiresAt: String? = nil) {
        requestType = code.kind.requestType
        email = code.email
        newEmail = code.newEmail
        continueUrl = code.continueURL
        campaignId = code.campaignID.map(String.init)
        self.expiresAt = expiresAt
    }
}
