import ArgumentParser

/// How a listing prints its rows: an aligned table for people, or JSON, JSON lines or CSV for programs.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case table, json, jsonl, csv
}

/// `--format table|json|jsonl|csv` and its alias `--json`, the same on every listing command.
struct OutputOptions: ParsableArguments {
    @Option(help: "Output format: table, json (one array), jsonl (one object per line) or csv (a header row first).")
    var format: OutputFormat?

    @Flag(help: "The same as --format json.") var json = false

    /// The format asked for, or the command's default; `--json` and another `--format` together are refused.
    func resolved(default fallback: OutputFormat = .table) throws -> OutputFormat {
        if json, let format, format != .json {
            throw ValidationError("--json means --format json; give one or the other, not --format \(format.rawValue) as well")
        }
        return json ? .json : format ?? fallback
    }
}
