import Foundation
import Hummingbird
import RequestOperations

/// The service's routes: each handler calls the upstream through reqtop and answers JSON;
/// an upstream failure is a 502 that says which stage failed and how often it was tried.
enum Routes {
    static func router(upstream: Upstream) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/health") { _, _ in "ok\n" }
        router.get("/resource/:name") { _, context -> Response in
            let name = try context.parameters.require("name")
            do {
                let resource = try await upstream.resource(name)
                return json(["resource": resource.resource, "user": resource.user, "id": resource.id])
            } catch let error as RequestError {
                return badGateway(error)
            }
        }
        router.get("/flaky/:key") { request, context -> Response in
            let key = try context.parameters.require("key")
            let failures = request.uri.queryParameters.get("failures", as: Int.self) ?? 0
            do {
                let result = try await upstream.flaky(key, failures: failures)
                return json(["key": key, "attempts": result.attempts.count, "status": result.status ?? 0])
            } catch let error as RequestError {
                return badGateway(error)
            }
        }
        return router
    }

    static func json(_ object: [String: Any], status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func badGateway(_ error: RequestError) -> Response {
        var answer: [String: Any] = ["error": "\(error)", "stage": error.stage.rawValue, "attempts": error.result.attempts.count]
        if let status = error.result.status { answer["upstreamStatus"] = status }
        return json(answer, status: .badGateway)
    }
}
