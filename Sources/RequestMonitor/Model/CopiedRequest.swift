import Foundation
import RequestEventFormat
import RequestOperations

/// `y`: the selected request as curl sees it, and where the screen puts it.
enum CopiedRequest {
    /// The folder the copies are written to (`$TMPDIR/reqtop-curl`).
    static var folder: String { NSTemporaryDirectory() + "reqtop-curl" }

    /// The file for an operation's copy: its id with anything but letters, digits, `-`, `_`
    /// and `.` made `_`, so an id never names another place.
    static func path(for id: String, suffix: String = ".sh", in folder: String = CopiedRequest.folder) -> String {
        let safe = String(id.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" }).prefix(100)
        return folder + "/" + (safe.isEmpty || safe.hasPrefix(".") ? "op" + safe : String(safe)) + suffix
    }

    static func effect(_ row: OperationRow) -> MonitorEffect {
        var binary: Data?
        if case .bytes(let data)? = row.requestBody, String(data: data, encoding: .utf8) == nil { binary = data }
        let text = CurlCommand.line(method: row.method, url: row.url, headers: row.requestHeaders, body: row.requestBody, redacted: true,
                                    bodyFile: binary == nil ? nil : path(for: row.id, suffix: ".body"), uploadFile: row.requestOptions?.bodyFile)
        return .copy(text: text, name: row.id, body: binary)
    }

    /// Why a request cannot be edited.
    struct NotEditable: Error {
        let message: String
    }

    /// The row's request as a plan entry to edit, or why it cannot be.
    static func entry(_ row: OperationRow) -> Result<RequestEntry, NotEditable> {
        var body: Data?
        switch row.requestBody {
        case .bytes(let data)?:
            guard String(data: data, encoding: .utf8) != nil else {
                return .failure(NotEditable(message: "\(row.id)'s body is binary: it cannot be edited as text"))
            }
            body = data
        case .omitted(_, let reason)?:
            return .failure(NotEditable(message: "\(row.id)'s body was not recorded (\(reason)): nothing to edit"))
        case nil:
            break
        }
        // A `Host` the URL says already is left to it, so an edit of the URL takes it along.
        return .success(RequestEntry(id: row.id, method: row.method, url: row.url,
                                     headers: HostAddress.withoutDerivedHost(row.requestHeaders, url: row.url), body: body,
                                     timeout: row.requestOptions?.attemptTimeout, deadline: row.requestOptions?.deadline))
    }
}
