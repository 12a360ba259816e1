import ArgumentParser
import Foundation
import RequestEndpoint
import RequestEventFormat
import RequestOperations

/// `--listen` and `--read-only`: open a monitor endpoint so `reqtop attach` can watch (and,
/// unless read-only, steer) this run from another terminal.
struct ListenOption: ParsableArguments {
    @Flag(help: "Open a monitor endpoint (a Unix socket) for `reqtop attach`; its path is printed on stderr.")
    var listen = false

    @Flag(name: .customLong("read-only"), help: "With --listen: attached monitors may watch but not send commands.")
    var readOnly = false

    func validate() throws {
        if readOnly, !listen {
            throw ValidationError("--read-only needs --listen (it says what attached monitors may do)")
        }
    }

    /// Opens the endpoint when asked, and says where.
    func start(_ queue: RequestQueue, name: String, redactor: Redactor?) throws -> MonitorEndpoint? {
        guard listen else { return nil }
        do {
            var options = MonitorEndpoint.Options(readOnly: readOnly, name: name)
            options.redactor = redactor
            let endpoint = try queue.startMonitorEndpoint(options: options)
            ReqtopMain.printError("reqtop: monitor endpoint at \(endpoint.path)\(readOnly ? " (read-only)" : ""); attach with: reqtop attach \(getpid())")
            return endpoint
        } catch {
            throw InputError(message: "cannot open the monitor endpoint: \(error)")
        }
    }
}
