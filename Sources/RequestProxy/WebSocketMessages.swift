import Foundation
import NIOCore

/// One direction of a WebSocket relayed as bytes: its frames read as they pass (RFC 6455
/// §5.2), never changed or held — the bytes go on as they came. Counts the messages (a data
/// frame with FIN set ends one; control frames, `ping`, `pong` and `close`, are counted
/// apart) and keeps the first bytes of the messages' payloads, unmasked, up to a limit: what
/// the row's Body tab shows of the conversation.
///
/// A frame header split across reads is gathered (at most 14 bytes); a payload is skipped by
/// count, so the scanner holds nothing but the kept bytes. Bytes that are not WebSocket
/// frames (a server that said 101 for another protocol) only make counts that mean little:
/// the scanner stops at the first reserved opcode and says so (``isWebSocket``).
struct WebSocketMessages {
    /// Whole messages so far: a data frame with FIN ends one once its payload has passed (a
    /// frame that declares more than ever comes is not counted).
    private(set) var messages = 0
    /// Control frames so far (ping, pong, close).
    private(set) var controlFrames = 0
    /// Payload bytes of data frames that passed so far (not what their headers declared).
    private(set) var payloadBytes = 0
    /// The first payload bytes of the data frames, unmasked, up to ``limit``; text messages
    /// one per line.
    private(set) var kept = Data()
    /// Whether a message was compressed (permessage-deflate sets RSV1): its kept bytes are.
    private(set) var compressed = false
    /// False once something that is no WebSocket frame was read.
    private(set) var isWebSocket = true
    let limit: Int

    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to come.
    private var remaining: UInt64 = 0
    private var mask: [UInt8]?
    private var maskOffset = 0
    private var keepingFrame = false
    /// The current message is text: a line break follows it in ``kept``.
    private var textMessage = false
    /// The current frame ends a message.
    private var endsMessage = false
    /// The current frame carries a message's payload (not a control frame's).
    private var dataFrame = false

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// Reads `buffer`'s readable bytes (without moving its reader index).
    mutating func read(_ buffer: ByteBuffer) {
        guard isWebSocket else { return }
        buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count, isWebSocket {
                if remaining > 0 {
                    let take = Int(min(remaining, UInt64(bytes.count - index)))
                    if keepingFrame { keep(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)])) }
                    if dataFrame { payloadBytes += take }
                    remaining -= UInt64(take)
                    index += take
                    if remaining == 0 { frameEnded() }
                    continue
                }
                header.append(bytes[index])
                index += 1
                headerRead()
            }
        }
    }

    /// A byte was added to the header: once it is whole, the frame begins.
    private mutating func headerRead() {
        guard header.count >= 2 else { return }
        let lengthCode = header[1] & 0x7F
        let masked = header[1] & 0x80 != 0
        let lengthBytes = lengthCode == 126 ? 2 : lengthCode == 127 ? 8 : 0
        let needed = 2 + lengthBytes + (masked ? 4 : 0)
        guard header.count == needed else { return }
        let opcode = header[0] & 0x0F
        let fin = header[0] & 0x80 != 0
        let rsv1 = header[0] & 0x40 != 0
        var length = UInt64(lengthCode)
        if lengthBytes > 0 {
            length = header[2..<(2 + lengthBytes)].reduce(0) { $0 << 8 | UInt64($1) }
        }
        mask = masked ? Array(header[(needed - 4)..<needed]) : nil
        maskOffset = 0
        header.removeAll(keepingCapacity: true)
        switch opcode {
        case 0x0, 0x1, 0x2:
            if opcode != 0 {
                // A message's first frame: its kind, and whether it was compressed.
                textMessage = opcode == 0x1
                if rsv1 { compressed = true }
            }
            endsMessage = fin
            dataFrame = true
            keepingFrame = kept.count < limit
        case 0x8, 0x9, 0xA:
            controlFrames += 1
            endsMessage = false
            dataFrame = false
            keepingFrame = false
        default:
            isWebSocket = false
            return
        }
        remaining = length
        if remaining == 0 { frameEnded() }
    }

    private mutating func keep(_ bytes: UnsafeRawBufferPointer) {
        let room = limit - kept.count
        guard room > 0 else { return }
        var part = Array(bytes.prefix(room))
        if let mask {
            for i in part.indices { part[i] ^= mask[(maskOffset + i) & 3] }
        }
        maskOffset += bytes.count
        kept.append(contentsOf: part)
    }

    /// The frame's payload has passed: a text message's end is a line break in what is kept.
    private mutating func frameEnded() {
        if endsMessage { messages += 1 }
        if endsMessage, textMessage, keepingFrame, kept.count < limit { kept.append(UInt8(ascii: "\n")) }
        endsMessage = false
    }
}
