import Foundation
import HeraldCore

extension TemplateFile {
    /// A template set on disk, as one action's directory is laid out: `<directory>/<locale>/subject.mustache`,
    /// `body.html.mustache` and `body.txt.mustache` for each locale (the layout is the global one).
    ///
    /// - Throws: `ARGUMENT_ERROR` for a directory that cannot be read or holds no locale; `TEMPLATE_ERROR` for a file
    ///   that is not UTF-8.
    public static func read(directory: String) throws -> [TemplateFile] {
        let fileManager = FileManager.default
        guard let entries = try? fileManager.contentsOfDirectory(atPath: directory) else {
            throw HeraldError(.argumentError, "cannot read the templates directory \(directory)")
        }
        var files: [TemplateFile] = []
        for entry in entries.sorted() {
            var isDirectory: ObjCBool = false
            guard fileManager.fileExists(atPath: "\(directory)/\(entry)", isDirectory: &isDirectory), isDirectory.boolValue,
                let locale = try? LocaleTag(entry)
            else { continue }
            for part in parts {
                let path = "\(directory)/\(entry)/\(part).mustache"
                guard let data = fileManager.contents(atPath: path) else { continue }
                guard let text = String(data: data, encoding: .utf8) else { throw HeraldError(.templateError, "\(path) is not valid UTF-8") }
                files.append(TemplateFile(locale: locale, part: part, text: text))
            }
        }
        guard !files.isEmpty else {
            throw HeraldError(
                .argumentError, "no templates in \(directory): expected <locale>/subject.mustache, body.html.mustache, body.txt.mustache")
        }
        return files
    }
}
