import NIOCore
import NIOEmbedded
@testable import RequestProxy
import XCTest

/// The connection's idle timer: told once nothing was read or written for its time, not
/// while bytes move either way, again each time it stays idle, and never after the close.
final class IdleWatchTests: XCTestCase {
    /// Counts the idle events that reach the end of the pipeline.
    private final class IdleEvents: ChannelInboundHandler {
        typealias InboundIn = NIOAny
        var count = 0
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .all? = event as? IdleStateHandler.IdleStateEvent { count += 1 }
        }
    }

    private func channel() throws -> (EmbeddedChannel, IdleEvents) {
        let events = IdleEvents()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(IdleWatch(timeout: .seconds(10)))
        try channel.pipeline.syncOperations.addHandler(events)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, events)
    }

    func testAQuietConnectionIsToldAtItsTimeAndAgainEachTimeAfter() throws {
        let (channel, events) = try channel()
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        XCTAssertEqual(events.count, 0)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertEqual(events.count, 1)
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        XCTAssertEqual(events.count, 2)
        _ = try channel.finish()
    }

    func testReadsAndWritesEachPutItOff() throws {
        let (channel, events) = try channel()
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\n"))
        // 10 s from the start, 4 from the read: not idle.
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        XCTAssertEqual(events.count, 0)
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try channel.writeOutbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\n"))
        // 10 s after the read, 2 after the write.
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        XCTAssertEqual(events.count, 0)
        // 10 s after the write.
        channel.embeddedEventLoop.advanceTime(by: .seconds(8))
        XCTAssertEqual(events.count, 1)
        XCTAssertNotNil(try channel.readInbound(as: ByteBuffer.self), "what was read went on")
        XCTAssertNotNil(try channel.readOutbound(as: ByteBuffer.self), "what was written went on")
        _ = try channel.finish()
    }

    func testAClosedConnectionIsNotToldAnymore() throws {
        let (channel, events) = try channel()
        _ = try channel.finish()
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        XCTAssertEqual(events.count, 0)
    }

    func testTakenOutItStopsItsTimer() throws {
        let (channel, events) = try channel()
        let watch = try channel.pipeline.syncOperations.handler(type: IdleWatch.self)
        try channel.pipeline.syncOperations.removeHandler(watch).wait()
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        XCTAssertEqual(events.count, 0)
        _ = try channel.finish()
    }
}
