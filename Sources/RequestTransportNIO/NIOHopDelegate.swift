import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTPTypesHTTP1
import RequestOperations
import Synchronization

/// The AsyncHTTPClient delegate of one hop: passes what it hears to the exchange.
final class NIOHopDelegate: HTTPClientResponseDelegate, Sendable {
    typealias Response = Void
    let exchange: NIOExchange
    let hop: Int
    let url: URL

    init(exchange: NIOExchange, hop: Int, url: URL) {
        self.exchange = exchange
        self.hop = hop
        self.url = url
    }

    func didSendRequest(task: HTTPClient.Task<Void>) {
        exchange.sentRequest(hop: hop)
    }

    func didSendRequestPart(task: HTTPClient.Task<Void>, _ part: IOData) {
        exchange.sentBody(part.readableBytes, hop: hop)
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        exchange.received(head, hop: hop, url: url)
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        // A large part is lent without a copy (``LentBuffers``: a proxy writes the buffer on
        // as it came); a small one is copied, so a trickle of tiny parts held in a stream
        // cannot each pin a larger read buffer. Data's generic init from the buffer's view
        // first tried dynamic casts (half its cost).
        let data = buffer.readableBytes >= LentBuffers.minimumLent
            ? LentBuffers.data(lending: buffer) : Data(buffer: buffer, byteTransferStrategy: .copy)
        return exchange.received(data, hop: hop, on: task.eventLoop) ?? task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: Error) {
        let sentCertificate = exchange.clients.sendsClientCertificate
        // A refused chain may be an expired certificate, which BoringSSL does not say: look.
        guard NIOTLSFailureReading.isChainRefused(error), let host = url.host, exchange.clients.goesDirect(to: url) else {
            return exchange.complete(hop: hop, NIOErrorMapping.urlError(error, sentClientCertificate: sentCertificate))
        }
        ServerCertificateDates.check(host: host, port: url.port ?? 443, on: task.eventLoop).whenSuccess { [exchange, hop] dates in
            exchange.complete(hop: hop, NIOErrorMapping.urlError(error, sentClientCertificate: sentCertificate, tls: dates))
        }
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        exchange.complete(hop: hop, nil)
    }
}
