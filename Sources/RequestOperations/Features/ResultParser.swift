import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Turns a validated response into a typed value. Runs once, after the last attempt
/// succeeded; throwing ends the operation as a failure with ``RequestError/Reason/decoding(_:)``
/// (the retry policy is not asked: the same body would fail again).
///
/// Default: ``JSONResultParser``.
public protocol ResultParser: Sendable {
    associatedtype Value: Sendable
    func parse(_ data: Data, response: HTTPURLResponse?) throws -> Value
}

/// Decodes the body as JSON into `Value`.
public struct JSONResultParser<Value: Decodable & Sendable>: ResultParser {
    public init() {}

    public func parse(_ data: Data, response: HTTPURLResponse?) throws -> Value {
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch let error as DecodingError {
            throw ResultParsingError(message: Self.describe(error))
        }
    }

    /// Where the JSON did not fit, as a path: "token: expected String, found nothing".
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "the body" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context)): missing field \"\(key.stringValue)\""
        case .typeMismatch(let type, let context): return "\(path(context)): expected \(type)"
        case .valueNotFound(let type, let context): return "\(path(context)): expected \(type), found null"
        case .dataCorrupted(let context): return "\(path(context)): not valid JSON (\(context.debugDescription))"
        @unknown default: return "\(error)"
        }
    }
}

/// Why a body did not parse.
public struct ResultParsingError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// A request operation with a typed result: ``typedResult`` is `.success(value)` or the
/// ``RequestError`` of the stage that failed, with the operation's whole result.
public final class TypedRequestOperation<Parser: ResultParser>: RequestOperation, @unchecked Sendable {
    public let parser: Parser
    private let value = Mutex<Parser.Value?>(nil)

    public init(request: URLRequest, parser: Parser, id: String? = nil, options: RequestOptions = RequestOptions(),
                environment: RequestEnvironment, after parents: [RequestOperation] = [], build: RequestBuilder? = nil,
                completion: (@Sendable (RequestResult) -> Void)? = nil) {
        self.parser = parser
        super.init(message: RequestMessage(request), id: id, options: options, environment: environment, after: parents, build: build,
                   completion: completion)
    }

    override func parseBody(_ data: Data, response: () -> HTTPURLResponse?) throws {
        let parsed = try parser.parse(data, response: response())
        value.withLock { $0 = parsed }
    }

    /// Set once the operation ended.
    public var typedResult: Result<Parser.Value, RequestError>? {
        guard let result else { return nil }
        if let reason = result.error { return .failure(RequestError(reason: reason, result: result)) }
        guard let parsed = value.withLock({ $0 }) else { return .failure(RequestError(reason: .decoding("no value"), result: result)) }
        return .success(parsed)
    }
}

extension RequestQueue {
    /// Adds an operation whose body is decoded as JSON into `type`.
    @discardableResult
    public func add<Value: Decodable & Sendable>(_ request: URLRequest, decoding type: Value.Type, id: String? = nil,
                                                 options: RequestOptions = RequestOptions(), after parents: [RequestOperation] = [],
                                                 build: RequestBuilder? = nil) -> TypedRequestOperation<JSONResultParser<Value>> {
        let operation = TypedRequestOperation(request: request, parser: JSONResultParser<Value>(), id: id, options: options,
                                              environment: environment, after: parents, build: build)
        add(operation)
        return operation
    }
}
