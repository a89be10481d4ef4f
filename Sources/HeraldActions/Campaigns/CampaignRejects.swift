import Foundation
import HeraldCore

/// One row of a rejects file (`RejectsWriter`): the recipients file's line and why it was refused.
public struct CampaignReject: Sendable, Hashable {
    public let line: Int
    public let reason: String
}

extension CampaignsService {
    /// The first `limit` rows of the rejects file at `path`, in file order; a row that does not parse is skipped.
    ///
    /// - Throws: `NOT_FOUND` when there is no such file.
    public func rejects(path: String, limit: Int) throws -> [CampaignReject] {
        guard FileManager.default.isReadableFile(atPath: path), var reader = try? CSVRecordReader(path: path) else {
            throw HeraldError(.notFound, "no rejects file")
        }
        var rejects: [CampaignReject] = []
        _ = try reader.next()  // the header: line,reason,content
        while rejects.count < limit, let record = try reader.next() {
            guard record.defect == nil, let text = String(validating: record.bytes, as: UTF8.self),
                let cells = try? CSVLine.parse(text), cells.count >= 2, let line = Int(cells[0])
            else { continue }
            rejects.append(CampaignReject(line: line, reason: cells[1]))
        }
        return rejects
    }
}
