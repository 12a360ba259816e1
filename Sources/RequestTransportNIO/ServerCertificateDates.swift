import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import RequestOperations

/// Why a server's certificate chain was refused, when its dates are why.
///
/// BoringSSL reports every refused chain as `CERTIFICATE_VERIFY_FAILED` and NIOSSL does not
/// pass on its verify result, so an expired certificate would read as untrusted. After such
/// a failure (only then) the transport connects once more to read the server's certificate:
/// nothing is sent, the handshake is abandoned as soon as the certificate is seen, and the
/// look is bounded by `timeout`. Direct connections only (through a proxy the failure stays
/// `untrusted`).
enum ServerCertificateDates {
    static func check(host: String, port: Int, on eventLoop: EventLoop, timeout: TimeAmount = .seconds(2)) -> EventLoopFuture<TLSFailure?> {
        let promise = eventLoop.makePromise(of: TLSFailure?.self)
        let context: NIOSSLContext
        do {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .noHostnameVerification
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            return eventLoop.makeSucceededFuture(nil)
        }
        let serverName = host.isEmpty || host.first!.isNumber || host.contains(":") ? nil : host
        let connect = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                do {
                    let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName, customVerificationCallback: { certificates, verdict in
                        promise.succeed(certificates.first.flatMap(judge))
                        verdict.succeed(.failed)
                    })
                    try channel.pipeline.syncOperations.addHandler(handler)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: host, port: port)
        connect.whenComplete { result in
            guard case .success(let channel) = result else { return promise.succeed(nil) }
            promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
            channel.closeFuture.whenComplete { _ in promise.succeed(nil) }
        }
        eventLoop.scheduleTask(in: timeout) { promise.succeed(nil) }
        return promise.futureResult
    }

    /// Expired or not yet valid by the clock now, or nil.
    private static func judge(_ certificate: NIOSSLCertificate) -> TLSFailure? {
        let now = time(nil)
        if certificate.notValidAfter < now { return .expired }
        if certificate.notValidBefore > now { return .notYetValid }
        return nil
    }
}
