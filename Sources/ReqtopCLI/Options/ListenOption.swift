import ArgumentParser
import Foundation
import RequestEndpoint
import RequestEventFormat
import RequestOperations

/// `--listen`, `--read-only` and `--accept-faults`: open a monitor endpoint so `reqtop attach` can watch (and,
/// unless read-only, steer) this run from another terminal.
struct ListenOption: ParsableArguments {
    @Flag(help: "Open a monitor endpoint (a Unix socket) for `reqtop attach`; its path is printed on stderr.")
    var listen = false

    @Flag(name: .customLong("read-only"), help: "With --listen: attached monitors may watch but not send commands.")
    var readOnly = false

    @Flag(name: .customLong("accept-faults"),
          help: "With --listen: attached monitors may inject faults (! and Z on the Hosts screen); each monitor's are removed when it detaches.")
    var acceptFaults = false

    func validate() throws {
        if readOnly, !listen {
            throw ValidationError("--read-only needs --listen (it says what attached monitors may do)")
        }
        if acceptFaults, !listen {
            throw ValidationError("--accept-faults needs --listen (it says what attached monitors may do)")
        }
        if acceptFaults, readOnly {
            throw ValidationError("--accept-faults and --read-only disagree: a read-only endpoint takes no faults")
        }
    }

    /// Opens the endpoint when asked, and says where.
    func start(_ queue: RequestQueue, name: String, redactor: Redactor?) throws -> MonitorEndpoint? {
        guard listen else { return nil }
        do {
            var options = MonitorEndpoint.Options(readOnly: readOnly, acceptsFaults: acceptFaults, name: name)
            options.redactor = redactor
            let endpoint = try queue.startMonitorEndpoint(options: options)
            ReqtopMain.printError("reqtop: monitor endpoint at \(endpoint.path)\(readOnly ? " (read-only)" : acceptFaults ? " (takes faults)" : ""); attach with: reqtop attach \(getpid())")
            return endpoint
        } catch {
            throw InputError(message: "cannot open the monitor endpoint: \(error)")
        }
    }
}
