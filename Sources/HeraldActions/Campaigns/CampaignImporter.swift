import Foundation
import HeraldCore
import HeraldStore

/// Streams recipients into a campaign's outbox rows in batched transactions.
///
/// Two threads share the work: the caller's reads, validates and applies the account rule to the next batch
/// while a ``HandoffThread`` writes the previous one. Only the writer touches the summary, the schedule and
/// the rejects file. A third copies the writer's log into the database (`checkpointInBackground`), so the
/// writer's commits never stop to do it.
///
/// Every row passes the sending rules (address, display name, locale, and the account rules of
/// `SendingService.send`); a refused row goes to the rejects file with its line number and reason (the
/// error code for a rule's refusal); good rows are never held back. Re-running an import skips rows
/// already imported (idempotent per campaign and email). The header is bounded (``maximumColumns`` names
/// of at most ``maximumHeaderName`` bytes) and so is every record (``CSVRecordReader/maximumRecord``).
final class CampaignImporter {
    typealias Summary = CampaignImportSummary

    /// One recipient before validation.
    struct Recipient {
        var line: Int?
        var email: String
        var displayName: String?
        var locale: String?
        var variables: [String: String]
        var raw: String
    }

    private let store: any HeraldStore
    /// The account rule for this campaign's action: which addresses it refuses, and why.
    private let refusals: ([String]) throws -> [String: HeraldError]
    private let campaign: Campaign
    private let defaultLocale: LocaleTag
    private let messageDomain: String
    private let batchSize: Int
    /// Validated rows waiting for the account rule and the writer, and beside them their source lines for
    /// the rejects file.
    private var batch: [CampaignRecipient] = []
    private var batchSources: [String] = []
    /// Rejects of the current batch, written in line order when the batch is flushed.
    private var batchRejects: [Reject] = []
    private lazy var writer = HandoffThread(name: "campaign import")
    private var batchBytes = 0
    private var rejects: RejectsWriter?
    private var summary = Summary()
    private var schedule: CampaignSchedule
    private let now = Date()
    /// Locale strings seen so far, parsed once each.
    private var locales: [String: LocaleTag?] = [:]

    typealias Reject = (line: Int, reason: String, raw: String)

    static let maximumField = 1000
    static let maximumColumns = 256
    static let maximumHeaderName = 256
    /// Raw bytes a batch may hold (good rows and rejects) before it is flushed early.
    static let maximumBatchBytes = 1 << 25

    init(
        store: any HeraldStore, campaign: Campaign, defaultLocale: LocaleTag, messageDomain: String, batchSize: Int = 20000,
        refusals: @escaping ([String]) throws -> [String: HeraldError]
    ) throws {
        self.store = store
        self.campaign = campaign
        self.defaultLocale = defaultLocale
        self.messageDomain = messageDomain
        self.batchSize = batchSize
        self.refusals = refusals
        schedule = CampaignSchedule(
            start: max(campaign.startAt, Date()), interval: campaign.rate.map { 1 / $0 } ?? 0,
            position: try store.importedCount(campaign: campaign.id))
    }

    /// Opens a recipients file and reads its header, failing with one clear line before anything is written.
    static func header(of path: String) throws -> [String] {
        var reader = try openReader(path)
        return try header(&reader, path)
    }

    private static func openReader(_ path: String) throws -> CSVRecordReader {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
            let reader = try? CSVRecordReader(path: path)
        else { throw HeraldError(.argumentError, "cannot read recipients file \(path)") }
        return reader
    }

    /// Reads the header row and sets the reader's expected field count to its column count.
    private static func header(_ reader: inout CSVRecordReader, _ path: String) throws -> [String] {
        let first: CSVRecordReader.Record?
        do {
            first = try reader.next()
        } catch {
            throw HeraldError(.argumentError, "cannot read recipients file \(path)")
        }
        if let defect = first?.defect { throw headerError(defect, path) }
        guard let first, let text = String(validating: first.bytes, as: UTF8.self), let cells = try? CSVLine.parse(text) else {
            throw HeraldError(.argumentError, "\(path): the first line must be a CSV header with an 'email' column")
        }
        try checkHeaderLimits(cells, path)
        let header = cells.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard header.contains("email") else {
            throw HeraldError(.argumentError, "\(path): the first line must be a CSV header with an 'email' column")
        }
        reader.expectedFields = header.count
        return header
    }

    private static func headerError(_ defect: CSVRecordReader.Defect, _ path: String) -> HeraldError {
        switch defect {
        case .unterminatedQuote:
            HeraldError(.argumentError, "\(path): the header has an unterminated quoted field")
        case .tooLong:
            HeraldError(
                .argumentError,
                "\(path): the header is over \(CSVRecordReader.maximumRecord) bytes "
                    + "(at most \(maximumColumns) columns of at most \(maximumHeaderName) bytes each)")
        }
    }

    private static func checkHeaderLimits(_ cells: [String], _ path: String) throws {
        guard cells.count <= maximumColumns else {
            throw HeraldError(.argumentError, "\(path): the header has \(cells.count) columns, more than the limit of \(maximumColumns)")
        }
        if let index = cells.firstIndex(where: { $0.utf8.count > maximumHeaderName }) {
            throw HeraldError(
                .argumentError, "\(path): header column \(index + 1) is over the limit of \(maximumHeaderName) bytes per column name")
        }
    }

    /// Imports a CSV file with a header row (`email`, optional `display_name`, `locale`, other columns as variables).
    func importCSV(path: String, rejectsPath: String) throws -> Summary {
        var reader = try Self.openReader(path)
        let header = try Self.header(&reader, path)
        let emailColumn = header.firstIndex(of: "email")!
        let nameColumn = header.firstIndex(of: "display_name")
        let localeColumn = header.firstIndex(of: "locale")
        return try importing(rejectsPath: rejectsPath) {
            try readRecords(&reader, path: path, header: header, columns: (emailColumn, nameColumn, localeColumn))
        }
    }

    /// Adds every record of the file after its header.
    private func readRecords(
        _ reader: inout CSVRecordReader, path: String, header: [String], columns: (email: Int, name: Int?, locale: Int?)
    ) throws {
        let (emailColumn, nameColumn, localeColumn) = columns
        while let record = try Self.read(&reader, path) {
            let line = record.line
            let bytes = record.bytes
            if let defect = record.defect {
                try reject(line, defect.reason, String(decoding: bytes, as: UTF8.self))
                continue
            }
            if bytes.isEmpty { continue }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                try reject(line, "invalid UTF-8", String(decoding: bytes, as: UTF8.self))
                continue
            }
            guard let cells = try? CSVLine.parse(text) else {
                try reject(line, "malformed quotes", text)
                continue
            }
            guard cells.count == header.count else {
                try reject(line, "wrong column count: expected \(header.count), found \(cells.count)", text)
                continue
            }
            var variables: [String: String] = [:]
            for (index, name) in header.enumerated() where index != emailColumn && index != nameColumn && index != localeColumn {
                variables[name] = cells[index]
            }
            try add(
                Recipient(
                    line: line, email: cells[emailColumn], displayName: nameColumn.map { cells[$0] }, locale: localeColumn.map { cells[$0] },
                    variables: variables, raw: text))
        }
    }

    /// Accounts read per page by `importAccounts`.
    static let accountPage = 1000

    /// Imports accounts (all, or only those whose email is unverified), oldest first, a page at a time; disabled
    /// accounts are skipped.
    func importAccounts(unverifiedOnly: Bool, rejectsPath: String) throws -> Summary {
        try importing(rejectsPath: rejectsPath) {
            var last: CampaignAccount?
            repeat {
                let page = try store.campaignAccounts(unverifiedOnly: unverifiedOnly, after: last, limit: Self.accountPage)
                for account in page {
                    try add(
                        Recipient(
                            line: nil, email: account.email, displayName: account.displayName, locale: nil, variables: [:],
                            raw: account.email))
                }
                last = page.count == Self.accountPage ? page.last : nil
            } while last != nil
        }
    }

    /// Runs `addRows` with the rejects file open and the writer's log copied on a thread of its own, then writes the
    /// last batch and the rejected count.
    private func importing(rejectsPath: String, _ addRows: () throws -> Void) throws -> Summary {
        rejects = try RejectsWriter(path: rejectsPath)
        defer { rejects?.close() }
        let stopCheckpoints = store.checkpointInBackground(besideRequests: false)
        defer { stopCheckpoints() }  // after the writer; what log is left, SQLite copies as usual
        defer { try? writer.finish() }  // before the rejects file closes: the writer may still be using it
        try addRows()
        try flush()
        try writer.finish()
        try finish()
        return summary
    }

    private func add(_ recipient: Recipient) throws {
        let line = recipient.line ?? 0
        if recipient.email.utf8.count > 254 { return try reject(line, "field too long: email", recipient.raw) }
        if let name = recipient.displayName, name.count > DisplayName.maximumLength {
            return try reject(line, "field too long: display_name", recipient.raw)
        }
        if let long = recipient.variables.first(where: { $0.value.count > Self.maximumField }) {
            return try reject(line, "field too long: \(long.key)", recipient.raw)
        }
        guard let address = try? EmailAddress(recipient.email) else { return try reject(line, "invalid address", recipient.raw) }
        let displayName = recipient.displayName.flatMap { $0.isEmpty ? nil : $0 }
        if let displayName, (try? DisplayName.validate(displayName)) == nil {
            return try reject(line, "invalid display_name", recipient.raw)
        }
        var localeTag = defaultLocale
        if let locale = recipient.locale, !locale.isEmpty {
            guard let tag = self.locale(locale) else { return try reject(line, "invalid locale", recipient.raw) }
            localeTag = tag
        }
        let row = CampaignRecipient(
            email: address.value, displayName: displayName, locale: localeTag,
            variablesJSON: recipient.variables.isEmpty ? nil : Self.json(recipient.variables), line: recipient.line)
        batch.append(row)
        batchSources.append(recipient.raw)
        batchBytes += recipient.raw.utf8.count
        if batch.count >= batchSize || batchRejects.count >= batchSize || batchBytes >= Self.maximumBatchBytes { try flush() }
    }

    private static func read(_ reader: inout CSVRecordReader, _ path: String) throws -> CSVRecordReader.Record? {
        do {
            return try reader.next()
        } catch {
            throw HeraldError(.argumentError, "error reading \(path): \(error.localizedDescription)")
        }
    }

    private func locale(_ text: String) -> LocaleTag? {
        if let known = locales[text] { return known }
        let parsed = try? LocaleTag(text)
        if locales.count < 10_000 { locales[text] = parsed }
        return parsed
    }

    /// `{"a":"b",…}` with keys sorted: the variables column, without a JSONEncoder per row.
    static func json(_ variables: [String: String]) -> String {
        "{" + variables.sorted { $0.key < $1.key }.map { "\(JSONText.quote($0.key)):\(JSONText.quote($0.value))" }.joined(separator: ",") + "}"
    }

    private func reject(_ line: Int, _ reason: String, _ raw: String) throws {
        batchRejects.append((line, reason, raw))
        batchBytes += raw.utf8.count
        if batchRejects.count >= batchSize || batchBytes >= Self.maximumBatchBytes { try flush() }
    }

    /// Applies the account rule to the batch (a read, beside the writer), then hands the rows and the batch's
    /// rejects to the writer thread.
    private func flush() throws {
        var rejected = batchRejects
        var rows = batch
        var sources = batchSources
        batchRejects.removeAll(keepingCapacity: true)
        batch.removeAll(keepingCapacity: true)
        batchSources.removeAll(keepingCapacity: true)
        batchBytes = 0
        if !rows.isEmpty {
            let refused = try refusals(rows.map(\.email))
            if !refused.isEmpty {
                var kept: [Int] = []
                for index in rows.indices {
                    if let refusal = refused[rows[index].email] {
                        let reason = refusal.detail.isEmpty ? refusal.code.rawValue : "\(refusal.code.rawValue) (\(refusal.detail))"
                        rejected.append((rows[index].line ?? 0, reason, sources[index]))
                    } else {
                        kept.append(index)
                    }
                }
                (rows, sources) = (kept.map { rows[$0] }, kept.map { sources[$0] })
            }
        }
        guard !rows.isEmpty || !rejected.isEmpty else { return }
        try writer.submit { [self, rows, sources, rejected] in try write(rows, sources: sources, rejecting: rejected) }
    }

    /// On the writer thread: queues the rows in one fsynced transaction (conflicts are re-runs of the same line,
    /// or duplicates), then writes the batch's rejects in line order.
    private func write(_ rows: [CampaignRecipient], sources: [String], rejecting earlier: [Reject]) throws {
        var rejected = earlier
        defer {
            summary.rejected += rejected.count
            for item in rejected.sorted(by: { $0.line < $1.line }) { rejects?.write(line: item.line, reason: item.reason, content: item.raw) }
        }
        guard !rows.isEmpty else { return }
        let outcomes = try store.addRecipients(rows, to: campaign, schedule: &schedule, messageDomain: messageDomain, now: now)
        for (index, outcome) in outcomes.enumerated() {
            switch outcome {
            case .imported: summary.imported += 1
            case .alreadyImported: summary.alreadyImported += 1
            case .duplicate: rejected.append((rows[index].line ?? 0, "duplicate in campaign", sources[index]))
            }
        }
    }

    private func finish() throws {
        try store.setRejected(campaign: campaign.id, count: summary.rejected, now: now)
    }
}
