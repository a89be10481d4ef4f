import HeraldCore
import Testing

@Suite struct ActionCodeSettingsTests {
    let domains = ["localhost", "app.example.com"]

    func code(_ settings: ActionCodeSettings, _ kind: ActionKind = .verifyEmail) -> String? {
        do {
            try settings.validate(for: kind, authorizedDomains: domains)
            return nil
        } catch let error as HeraldError {
            return error.code.rawValue
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test func authorizedContinueURLPasses() {
        #expect(code(ActionCodeSettings(url: "https://app.example.com/finish?cart=1")) == nil)
        #expect(code(ActionCodeSettings(url: "http://localhost:3000/finish")) == nil)
        #expect(code(ActionCodeSettings()) == nil, "verification links need no settings")
    }

    @Test func continueURLProblemsUseFirebaseCodes() {
        #expect(code(ActionCodeSettings(url: "")) == "MISSING_CONTINUE_URI")
        #expect(code(ActionCodeSettings(handleCodeInApp: true)) == "MISSING_CONTINUE_URI")
        #expect(code(ActionCodeSettings(url: "not a url")) == "INVALID_CONTINUE_URI")
        #expect(code(ActionCodeSettings(url: "/relative/path")) == "INVALID_CONTINUE_URI")
        #expect(code(ActionCodeSettings(url: "javascript:alert(1)")) == "INVALID_CONTINUE_URI")
        #expect(code(ActionCodeSettings(url: "https://evil.example/finish")) == "UNAUTHORIZED_DOMAIN")
        #expect(code(ActionCodeSettings(url: "https://app.example.com.evil.example/")) == "UNAUTHORIZED_DOMAIN")
    }

    @Test func signInRequiresAContinueURLAndHandleCodeInApp() {
        #expect(code(ActionCodeSettings(), .signIn) == "MISSING_CONTINUE_URI")
        #expect(code(ActionCodeSettings(url: "https://app.example.com/"), .signIn) == "ARGUMENT_ERROR")
        #expect(code(ActionCodeSettings(url: "https://app.example.com/", handleCodeInApp: true), .signIn) == nil)
    }

    @Test func mobileSettingsNeedTheirIdentifiers() {
        let url = "https://app.example.com/"
        #expect(code(ActionCodeSettings(url: url, androidInstallApp: true)) == "MISSING_ANDROID_PACKAGE_NAME")
        #expect(code(ActionCodeSettings(url: url, androidMinimumVersion: "12")) == "MISSING_ANDROID_PACKAGE_NAME")
        #expect(code(ActionCodeSettings(url: url, androidPackageName: "")) == "MISSING_ANDROID_PACKAGE_NAME")
        #expect(code(ActionCodeSettings(url: url, iOSBundleId: "")) == "MISSING_IOS_BUNDLE_ID")
        #expect(code(ActionCodeSettings(url: url, iOSAppStoreId: "123")) == "MISSING_IOS_BUNDLE_ID")
        #expect(
            code(
                ActionCodeSettings(
                    url: url, iOSBundleId: "com.example", androidPackageName: "com.example", androidInstallApp: true, androidMinimumVersion: "12"))
                == nil)
    }

    @Test func linkDomainMustBeAnAuthorizedHostname() {
        let url = "https://app.example.com/"
        #expect(code(ActionCodeSettings(url: url, handleCodeInApp: true, linkDomain: "app.example.com")) == nil)
        #expect(code(ActionCodeSettings(url: url, linkDomain: "")) == "INVALID_HOSTING_LINK_DOMAIN")
        #expect(code(ActionCodeSettings(url: url, linkDomain: "https://app.example.com")) == "INVALID_HOSTING_LINK_DOMAIN")
        #expect(code(ActionCodeSettings(url: url, linkDomain: "links.evil.example")) == "INVALID_HOSTING_LINK_DOMAIN")
    }

    @Test func dynamicLinkDomainIsRejectedPointingToLinkDomain() throws {
        let error = #expect(throws: HeraldError.self) {
            try ActionCodeSettings(url: "https://app.example.com/", dynamicLinkDomain: "example.page.link")
                .validate(for: .signIn, authorizedDomains: domains)
        }
        #expect(error?.code == .invalidDynamicLinkDomain)
        #expect(error?.detail.contains("linkDomain") == true)
    }
}
