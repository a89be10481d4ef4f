import HeraldActions
import HeraldCore
import Hummingbird

/// `GET /emulator/v1/projects/{project}/oobCodes`: in emulator mode, the codes minted so far, from memory.
struct EmulatorController: Sendable {
    let configuration: HeraldConfiguration
    let sending: SendingService

    var routes: RouteCollection<HeraldRequestContext> {
        RouteCollection(context: HeraldRequestContext.self)
            .get("projects/:project/oobCodes", use: oobCodes)
    }

    @Sendable func oobCodes(_ request: Request, context: HeraldRequestContext) throws -> EmulatorCodesReply {
        guard configuration.server.emulatorMode, context.parameters.get("project") == configuration.project.id else {
            throw FirebaseError.notFound
        }
        return EmulatorCodesReply(oobCodes: sending.emulatedCodes.map(EmulatorCodesReply.Entry.init))
    }
}

/// The Firebase emulator's listing: `{"oobCodes":[{email,newEmail?,oobCode,oobLink,requestType}]}`.
struct EmulatorCodesReply: ResponseEncodable {
    struct Entry: Encodable, Sendable {
        let email: String
        let newEmail: String?
        let oobCode: String
        let oobLink: String
        let requestType: String

        init(_ code: EmulatorCode) {
            email = code.email
            newEmail = code.newEmail
            oobCode = code.oobCode
            oobLink = code.oobLink
            requestType = code.requestType
        }
    }

    let oobCodes: [Entry]
}
