import Foundation

/// Whether an answer's `Content-Length` frames its body, checked by the engine itself so
/// both transports end alike: SwiftNIO's parser refuses what is wrong here, while
/// FoundationNetworking (libcurl) let two conflicting lengths, or a length of 10^23 with a
/// 5-byte body, end as a success. RFC 9112 §6.3: a message whose length cannot be told is an
/// error, and one that ends before its length is incomplete.
enum ResponseFraming {
    /// What the `Content-Length` among `headers` says: nothing (absent), a length, or why it
    /// is no length. Repeats of the same number, as RFC 9110 §8.6 allows, are one.
    enum DeclaredLength: Equatable {
        case absent
        case length(Int)
        case problem(String)
    }

    static func declaredLength(_ headers: [String: String]) -> DeclaredLength {
        guard let raw = headers.value(forHTTPHeader: "Content-Length") else { return .absent }
        // The usual case, one whole number, without Foundation's splitting and trimming.
        if let length = Self.wholeNumber(raw) { return .length(length) }
        let values = raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let first = values.first, values.allSatisfy({ $0 == first }) else {
            return .problem("conflicting Content-Length headers (\(values.joined(separator: ", ")))")
        }
        guard !first.isEmpty, first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let length = Int(first) else {
            return .problem("Content-Length \(first.prefix(40)) is not a length this client can take")
        }
        return .length(length)
    }

    /// Why the `Content-Length` among `headers` is no length, or nil (absent, or one whole
    /// number).
    static func lengthProblem(_ headers: [String: String]) -> String? {
        if case .problem(let problem) = declaredLength(headers) { return problem }
        return nil
    }

    /// `text` as a length when it is only digits (at most 18: no overflow), else nil.
    private static func wholeNumber(_ text: String) -> Int? {
        let digits = text.utf8
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// Why a body that ended after `received` bytes is shorter or longer than its
    /// `Content-Length` said, or nil. Not asked where the length does not count the bytes
    /// the engine saw: a `HEAD` request, a status with no body (1xx, 204, 304), a 3xx (whose
    /// body FoundationNetworking keeps from the delegate), or a coded body (the length is the
    /// coded one; the engine counts decoded bytes).
    static func mismatch(headers: [String: String], status: Int, method: String?, received: Int) -> String? {
        guard method?.uppercased() != "HEAD", (200..<300).contains(status) || status >= 400, status != 204,
              case .length(let declared) = declaredLength(headers) else { return nil }
        if headers.contentCoding != nil { return nil }
        guard received != declared else { return nil }
        return received < declared
            ? "the answer ended after \(received) of the \(declared) bytes its Content-Length promised"
            : "the answer ran \(received - declared) bytes past the \(declared) its Content-Length promised"
    }
}
