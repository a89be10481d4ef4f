/// Text made safe for HTML, as the templates escape `{{name}}`: the campaign report and the console use it.
public enum HTMLText {
    /// `&`, `<`, `>`, `"` and `'` as entities.
    public static func escape(_ text: String) -> String { CompiledTemplate.escapeHTML(text) }
}
