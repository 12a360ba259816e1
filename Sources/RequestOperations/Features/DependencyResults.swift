import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Builds a dependent operation's request from its parents' results, when they have all
/// succeeded. Throwing fails the operation (stage `preparation`).
public typealias RequestBuilder = @Sendable (URLRequest, DependencyResults) throws -> URLRequest

/// The results of an operation's parents, for its ``RequestBuilder``.
///
/// ```swift
/// let login = queue.add(loginRequest, decoding: Token.self)
/// let profile = queue.add(URLRequest(url: profileURL), after: [login]) { request, parents in
///     var request = request
///     request.setValue("Bearer \(try parents.value(of: login).token)", forHTTPHeaderField: "Authorization")
///     return request
/// }
/// ```
public struct DependencyResults: Sendable {
    public let parents: [RequestOperation]

    /// The typed value of a parent.
    public func value<Parser: ResultParser>(of parent: TypedRequestOperation<Parser>) throws -> Parser.Value {
        guard let typed = parent.typedResult else { throw DependencyError(message: "\(parent.id) has not finished") }
        return try typed.get()
    }

    /// The result of the parent with `id`.
    public func result(of id: String) -> RequestResult? {
        parents.first { $0.id == id }?.result
    }
}

/// Why a dependent request could not be built.
public struct DependencyError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

extension RequestQueue {
    /// Adds an operation that runs after `parents` and builds its request from their results.
    /// If a parent fails or is cancelled, it is cancelled (`by: "dependency"`) without running.
    @discardableResult
    public func add(_ request: URLRequest, id: String? = nil, options: RequestOptions = RequestOptions(),
                    after parents: [RequestOperation], build: RequestBuilder? = nil,
                    completion: (@Sendable (RequestResult) -> Void)? = nil) -> RequestOperation {
        let operation = RequestOperation(request: request, id: id, options: options, environment: environment,
                                         after: parents, build: build, completion: completion)
        add(operation)
        return operation
    }
}
