import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The body on the wire, both ways: the request's going up (`uploaded` events) and the
/// answer's coming down part by part — counted, told in `data` events, held to the body and
/// decoded-size limits, and put in memory, a file or the caller's stream (paced on NIO).
extension RequestOperation {
    func task(_ task: Int, didSendBodyBytes sent: Int) {
        state.withLock { state in
            guard state.isCurrent(task: task) else { return }
            if options.readTimeout != nil { state.current.lastProgress = environment.clock.now() }
            let total = state.current.uploadTotal
            // About a hundred events for a body of any size, none closer than 64 KiB.
            let step = total.map { max(64 << 10, $0 / 100) } ?? (1 << 20)
            guard sent - state.current.uploadAnnounced >= step || (total == sent && sent > state.current.uploadAnnounced) else { return }
            state.current.uploadAnnounced = sent
            publish(&state, .uploaded(bytes: sent, totalBytes: total))
        }
    }

    /// A `data` event is published once this many bytes came since the last one…
    static let dataEventBytes = 256 << 10
    /// …or this long after the last one (so a slow answer still shows progress).
    static let dataEventInterval: TimeInterval = 0.1

    /// Publishes the bytes that came since the last `data` event.
    func announceData(_ state: inout State, at now: TimeInterval) {
        publish(&state, .data(bytes: state.current.unannouncedBytes))
        state.current.unannouncedBytes = 0
        state.current.lastDataEventAt = now
    }

    /// The wire size of an answer that came encoded, when its `Content-Length` says it.
    static func encodedLength(headers: [String: String], expectedBytes: Int?) -> Int? {
        guard let expectedBytes,
              let encoding = headers.value(forHTTPHeader: "Content-Encoding"),
              !encoding.isEmpty, encoding.caseInsensitiveCompare("identity") != .orderedSame else { return nil }
        return expectedBytes
    }

    func task(_ task: Int, didReceive data: Data) {
        _ = receive(task, data, paced: false)
    }

    func task(_ task: Int, didReceivePaced data: Data) -> Bool {
        receive(task, data, paced: true)
    }

    /// Where a part of the body goes, once the lock has counted it: the caller's stream or
    /// the answer's file, written outside the lock (a file write is I/O, a stream's push may
    /// wake its reader); kept in memory under it.
    private enum BodySink {
        case kept
        case stream(ResponseBodyStream, running: TransportTask)
        case file(ResponseFile)
        /// The attempt ends: this task is cancelled.
        case stop(TransportTask?)
    }

    /// A part of the answer's body. `paced`: the transport can wait — false asks it to read
    /// no more until ``RequestTransport/resumeReading(_:)`` (the caller's stream is full).
    private func receive(_ task: Int, _ data: Data, paced: Bool) -> Bool {
        let sink = state.withLock { state -> BodySink? in
            guard state.isCurrent(task: task), state.current.redirectRefused == nil, state.current.localFailure == nil else { return nil }
            let now = environment.clock.now()
            if state.record.firstByteAt == nil { state.record.firstByteAt = now }
            state.record.bytes += data.count
            if options.readTimeout != nil { state.current.lastProgress = now }
            if let wire = state.current.encodedLength, let ratio = options.maxDecodedRatio,
               case let (cap, overflow) = wire.multipliedReportingOverflow(by: max(1, ratio)),
               !overflow, state.record.bytes > max(1 << 20, cap) {
                // Before the bytes are kept or written: a bomb fills neither memory nor disk.
                state.current.localFailure = TransportError(
                    code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                    message: "the decoded answer grew past \(ratio)× its \(wire) bytes on the wire (a decompression bomb?; RequestOptions.maxDecodedRatio)")
                return .stop(state.current.task)
            }
            // One `data` event per 256 KiB or 100 ms, not per part: a bulk download is tens
            // of thousands of parts, and an event each halved its rate while watched.
            state.current.unannouncedBytes += data.count
            if state.current.unannouncedBytes >= Self.dataEventBytes || now - state.current.lastDataEventAt >= Self.dataEventInterval {
                announceData(&state, at: now)
            }
            if state.current.streaming, let stream = options.bodyStream, let running = state.current.task {
                return .stream(stream, running: running)
            }
            if let file = state.answer.file {
                if let limit = options.maxFileBytes, state.record.bytes > limit {
                    state.current.localFailure = TransportError(
                        code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                        message: "the answer is over the \(limit)-byte limit for its file (RequestOptions.maxFileBytes)")
                    return .stop(state.current.task)
                }
                return .file(file)
            }
            if let limit = options.maxResponseBytes, state.answer.body.count + data.count > limit {
                // Ended here: a server that sends without end cannot fill the memory.
                state.current.localFailure = TransportError(
                    code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                    message: "the answer is over the \(limit)-byte limit (RequestOptions.maxResponseBytes; a destination file has none)")
                return .stop(state.current.task)
            }
            state.answer.body.append(data)
            return .kept
        }
        switch sink {
        case nil, .kept?:
            return true
        case .stop(let stopped)?:
            if let stopped { cancelTasks([stopped]) }
            return true
        case .stream(let stream, let running)?:
            let transport = environment.transport
            var room: (@Sendable () -> Void)?
            var wakeLater: ResponseBodyStream.WakeScheduler?
            if paced {
                room = { transport.resumeReading(running) }
                wakeLater = { work in transport.afterReads(running, work) }
            }
            let goOn = stream.push(data, whenRoom: room, wakeLater: wakeLater)
            if !goOn, !paced, let limit = options.maxResponseBytes, stream.buffered > limit {
                // A transport that cannot wait (URLSession): a reader far behind would
                // fill the memory instead.
                failLocally(task, TransportError(
                    code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                    message: "the stream's reader fell more than \(limit) bytes behind (this transport cannot wait for it; RequestOptions.maxResponseBytes)"))
            }
            return paced ? goOn : true
        case .file(let file)?:
            do {
                try file.write(data)
            } catch let error as ResponseFileError {
                failLocally(task, TransportError(code: URLError.Code.cannotWriteToFile.rawValue, message: error.message))
            } catch {}
            return true
        }
    }

    /// Something on this side ends the attempt of `task` (a file that could not be written,
    /// a reader far behind): it fails with `error`, and its task is cancelled.
    private func failLocally(_ task: Int, _ error: TransportError) {
        let running = state.withLock { state -> TransportTask? in
            guard state.isCurrent(task: task), state.current.localFailure == nil else { return nil }
            state.current.localFailure = error
            return state.current.task
        }
        if let running { cancelTasks([running]) }
    }
}
