import Foundation
import ReqtopApplication
import RequestTransportNIO

extension TransportOption {
    /// These options with the plan's connection settings under them: a flag given wins.
    func merged(with plan: PlanConnection) -> TransportOption {
        var merged = self
        merged.caFile = caFile ?? plan.caFile
        merged.certificateFile = certificateFile ?? plan.certificateFile
        merged.keyFile = keyFile ?? plan.keyFile
        merged.insecure = insecure || plan.insecure
        merged.proxy = proxy ?? plan.proxy
        return merged
    }

    /// How an error names each TLS setting: the flag when one was given, else the plan's
    /// field (`plan.json: tls.key`).
    func tlsNames(with plan: PlanConnection) -> TLSOptions.Names {
        var names = TLSOptions.Names()
        let name = URL(fileURLWithPath: plan.file).lastPathComponent
        if caFile == nil, plan.caFile != nil { names.caFile = "\(name): tls.cacert" }
        if certificateFile == nil, plan.certificateFile != nil { names.certificateFile = "\(name): tls.cert" }
        if keyFile == nil, plan.keyFile != nil { names.keyFile = "\(name): tls.key" }
        if !insecure, plan.insecure { names.insecure = "\(name): tls.insecure" }
        return names
    }
}
