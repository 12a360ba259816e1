import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Checks a response as soon as it arrives, before its body.
///
/// A failed check is an ``AttemptFailure`` that the retry policy judges. With
/// ``RequestOptions/cancelOnInvalidResponse`` the task is cancelled at once instead of
/// reading a body nobody wants.
public protocol ResponseValidator: Sendable {
    /// `nil` when the response is acceptable, else what is wrong with it.
    func validate(_ response: HTTPURLResponse) -> AttemptFailure?
    /// The same check from what the operation has at hand: the status, the header fields as
    /// strings, and the response as FoundationNetworking's type, made only when asked for
    /// (a transport such as NIO's reports no `HTTPURLResponse`, and making one costs ~5 µs).
    /// The operation calls this one. The default asks for the response and calls
    /// ``validate(_:)``; a validator that reads only status and headers implements it instead.
    func validate(status: Int, headers: [String: String], response: () -> HTTPURLResponse?) -> AttemptFailure?
}

extension ResponseValidator {
    public func validate(status: Int, headers: [String: String], response: () -> HTTPURLResponse?) -> AttemptFailure? {
        response().flatMap(validate)
    }
}

/// The default: a status in `acceptableStatusCodes` (200..<300) and, when given, a
/// `Content-Type` whose media type is one of `acceptableContentTypes`
/// (`application/json`, or `application/*` as a wildcard).
public struct StandardResponseValidator: ResponseValidator {
    public var acceptableStatusCodes: Set<Int>
    public var acceptableContentTypes: [String]?

    /// 200 ..< 300, made once: every `RequestOptions()` makes a validator, and a set of 100
    /// numbers built each time was 4 % of the engine's own CPU for a small GET on NIO.
    public static let successStatusCodes = Set(200..<300)

    public init(acceptableStatusCodes: Set<Int> = StandardResponseValidator.successStatusCodes, acceptableContentTypes: [String]? = nil) {
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
    }

    public func validate(_ response: HTTPURLResponse) -> AttemptFailure? {
        validate(status: response.statusCode, headers: response.headerDictionary) { response }
    }

    /// Reads status and headers only: the response is never made.
    public func validate(status: Int, headers: [String: String], response: () -> HTTPURLResponse?) -> AttemptFailure? {
        guard acceptableStatusCodes.contains(status) else {
            return .status(status, headers: headers)
        }
        guard let acceptable = acceptableContentTypes else { return nil }
        let contentType = headers.value(forHTTPHeader: "Content-Type") ?? ""
        let mediaType = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let accepted = acceptable.contains { pattern in
            let pattern = pattern.lowercased()
            if pattern.hasSuffix("/*") { return mediaType.hasPrefix(pattern.dropLast()) }
            return pattern == mediaType
        }
        return accepted ? nil : .validation("content type \"\(mediaType.isEmpty ? "none" : mediaType)\" is not one of \(acceptable.joined(separator: ", "))")
    }
}

extension HTTPURLResponse {
    /// Header fields as strings.
    var headerDictionary: [String: String] {
        var out: [String: String] = [:]
        for (key, value) in allHeaderFields {
            out["\(key)"] = "\(value)"
        }
        return out
    }
}
