import Foundation
import RequestEndpoint

/// Attaching to a program's endpoint: connecting and reading its hello, each way it can fail
/// said as bad input (exit 2), not as a program that "ended".
package enum EndpointAttach {
    /// Connects to the endpoint at `path` and reads its hello. A refusal, another protocol
    /// version or a socket that is no endpoint is an error (exit 2), not a program that "ended".
    package static func open(_ path: String) throws -> (EndpointClient, EndpointClient.Hello) {
        let client: EndpointClient
        do {
            client = try EndpointClient.connect(path: path)
        } catch {
            throw InputError(message: "cannot attach to \(path): \(error)")
        }
        return try greet(client, at: path)
    }

    /// Connects to a socket of the endpoint folder, named by its program's pid, and reads its
    /// hello. A program that answers with another pid is refused: the folder is watched by
    /// pid, and it would be attached again at every look (`--all` at its start and every
    /// second after, alike).
    package static func open(socket: (pid: Int32, path: String)) throws -> (EndpointClient, EndpointClient.Hello) {
        let (client, hello) = try open(socket.path)
        guard hello.pid == socket.pid else {
            client.close()
            throw InputError(message: "cannot attach to \(socket.path): the program there says it is pid \(hello.pid), not \(socket.pid)")
        }
        return (client, hello)
    }

    /// Reads the program's hello on a new connection.
    package static func greet(_ client: EndpointClient, at path: String) throws -> (EndpointClient, EndpointClient.Hello) {
        switch client.greeting() {
        case .message(.hello(let greeting)):
            guard greeting.version == EndpointProtocol.version else {
                throw InputError(message: "cannot attach to \(path): the program speaks endpoint protocol version \(greeting.version); "
                                 + "this reqtop speaks version \(EndpointProtocol.version) (use the reqtop the program was built with)")
            }
            return (client, greeting)
        case .message(.error(let text)):
            throw InputError(message: "cannot attach to \(path): the program says: \(text)")
        case .message(.unreadable(let text)):
            throw InputError(message: "cannot attach to \(path): its first line is no hello (\(String(text.prefix(80)).debugDescription)); is it a reqtop endpoint?")
        case .message:
            throw InputError(message: "cannot attach to \(path): its first line is no hello; is it a reqtop endpoint?")
        case .closed:
            if let reason = client.closeReason {
                throw InputError(message: "cannot attach to \(path): the program refused this monitor: \(reason)")
            }
            throw InputError(message: "cannot attach to \(path): it closed the connection without a hello (is it a reqtop endpoint?)")
        case .timedOut:
            throw InputError(message: "cannot attach to \(path): no hello from it within 5 s (is it a reqtop endpoint?)")
        }
    }
}
