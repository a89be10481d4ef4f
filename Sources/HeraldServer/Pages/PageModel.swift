import HeraldActions
import HeraldCore

/// The template's view of one page: each property is a template variable of the same name; nil
/// leaves it out (an empty string would count as set).
struct PageModel {
    let lang: String
    let direction: String
    let appName: String
    /// The page's strings: `{{t.title_verify}}`.
    let t: [String: String]
    let minPasswordLength = String(PasswordHasher.minimumLength)
    let formAction = "/__/auth/action"
    let verifyConfirm: Bool
    let recoverConfirm: Bool
    let resetForm: Bool
    /// The typed-code page (`/__/auth/code`), and whether its action is a password reset (a new password field).
    let codeForm: Bool
    let codeReset: Bool
    let codeAction = "/__/auth/code"
    /// The code input's keyboard: `numeric` for digits, `text` for letters.
    let codeInputMode: String
    let success: Bool
    let error: Bool
    let unsubscribeConfirm: Bool
    /// Unsubscribe pages: the confirm page, or its success (`success` is set too).
    let unsubscribe: Bool
    /// The confirm page posts to its own URL (token included), whatever path a proxy serves it under.
    let unsubscribeAction = ""
    let token: String?
    let message: String?
    let email: String?
    let newEmail: String?
    let mode: String?
    let oobCode: String?
    let apiKey: String?
    let csrfToken: String?
    let continueUrl: String?

    init(
        kind: PageRenderer.Kind, lang: LocaleTag, appName: String, strings: [String: String], message: String?, form: PageForm?
    ) {
        self.lang = lang.value
        direction = lang.isRightToLeft ? "rtl" : "ltr"
        self.appName = appName
        t = strings
        verifyConfirm = kind == .verifyConfirm
        recoverConfirm = kind == .recoverConfirm
        resetForm = kind == .resetForm
        codeForm = kind == .codeForm
        codeReset = kind == .codeForm && form?.mode == ActionKind.resetPassword.mode
        codeInputMode = form?.letters == true ? "text" : "numeric"
        success = kind == .success || kind == .unsubscribed
        error = kind == .error
        unsubscribeConfirm = kind == .unsubscribeConfirm
        unsubscribe = kind == .unsubscribeConfirm || kind == .unsubscribed || message == strings["invalid_unsubscribe"]
        token = Self.set(form?.token)
        self.message = Self.set(message)
        email = Self.set(form?.email)
        newEmail = Self.set(form?.newEmail)
        mode = Self.set(form?.mode)
        oobCode = Self.set(form?.oobCode)
        apiKey = Self.set(form?.apiKey)
        csrfToken = Self.set(form?.csrfToken)
        continueUrl = Self.set(form?.continueUrl)
    }

    private static func set(_ value: String?) -> String? {
        value?.isEmpty == false ? value : nil
    }
}
