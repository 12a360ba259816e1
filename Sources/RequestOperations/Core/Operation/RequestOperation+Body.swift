import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The body on the wire, both ways: the request's going up (`uploaded` events) and the
/// answer's coming down part by part — counted, told in `data` events, held to the body and
/// decoded-size limits, and put in memory, a file or the caller's stream (paced on NIO).
extension RequestOperation {
    func task(_ task: Int, didSendBodyBytes sent: Int) {
        transition(BodyBytesSent(task: task, sent: sent, at: environment.now()))
    }

    /// `sent` bytes of the lead `task`'s request body are on the wire: said about a hundred
    /// times for a body of any size, never closer than 64 KiB.
    struct BodyBytesSent: OperationTransition {
        let task: Int
        let sent: Int
        let at: TimeInterval

        func apply(to state: inout State, of operation: RequestOperation) {
            guard let progress = state.machine.bodyBytesSent(lead: task, sent: sent, at: at, tracksProgress: operation.options.readTimeout != nil)
            else { return }
            operation.publish(&state, .uploaded(bytes: sent, totalBytes: progress.total))
        }
    }

    /// A `data` event is published once this many bytes came since the last one…
    static let dataEventBytes = 256 << 10
    /// …or this long after the last one (so a slow answer still shows progress).
    static let dataEventInterval: TimeInterval = 0.1

    /// Publishes the bytes of the attempt in flight that came since the last `data` event.
    func announceData(_ state: inout State, at now: TimeInterval) {
        let bytes = state.machine.takeUnannouncedBytes(at: now)
        if bytes > 0 { publish(&state, .data(bytes: bytes)) }
    }

    /// The wire size of an answer that came encoded, when its `Content-Length` says it.
    static func encodedLength(headers: [String: String], expectedBytes: Int?) -> Int? {
        headers.contentCoding == nil ? nil : expectedBytes
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
    enum BodySink {
        case kept
        case stream(any StreamedAnswerSink, running: TransportTask)
        case file(ResponseFile)
        /// The attempt ends: this task is cancelled.
        case stop(TransportTask)
    }

    /// A part of the answer's body. `paced`: the transport can wait — false asks it to read
    /// no more until ``RequestTransport/resumeReading(_:)`` (the caller's stream is full).
    private func receive(_ task: Int, _ data: Data, paced: Bool) -> Bool {
        let sink = transition(BodyPart(task: task, data: data))
        assertOutsideTransition()
        switch sink {
        case nil, .kept?:
            return true
        case .stop(let stopped)?:
            cancelTasks([stopped])
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

    /// A part of the lead `task`'s answer: counted, held to the limits, kept in memory, or
    /// handed back to be written or pushed outside the lock. Once this side ended the attempt
    /// (a refused redirect, a limit), its bytes are not kept.
    struct BodyPart: OperationTransition {
        let task: Int
        let data: Data

        func apply(to state: inout State, of operation: RequestOperation) -> BodySink? {
            guard let lead = state.machine.bodyDestination(lead: task) else { return nil }
            let now = operation.environment.now()
            if state.record.firstByteAt == nil { state.record.firstByteAt = now }
            state.record.bytes += data.count
            if let wire = lead.encodedLength, let ratio = operation.options.maxDecodedRatio,
               case let (cap, overflow) = wire.multipliedReportingOverflow(by: max(1, ratio)),
               !overflow, state.record.bytes > max(1 << 20, cap) {
                // Before the bytes are kept or written: a bomb fills neither memory nor disk.
                return operation.stop(&state, task, TransportError(
                    code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                    message: "the decoded answer grew past \(ratio)× its \(wire) bytes on the wire (a decompression bomb?; RequestOptions.maxDecodedRatio)"))
            }
            // One `data` event per 256 KiB or 100 ms, not per part: a bulk download is tens
            // of thousands of parts, and an event each halved its rate while watched.
            let announce = state.machine.bodyBytesArrived(lead: task, count: data.count, at: now,
                                                          tracksProgress: operation.options.readTimeout != nil)
            if announce { operation.announceData(&state, at: now) }
            if lead.streaming, let stream = operation.options.bodyStream {
                // Its first bytes kept as they pass, for whoever reads events (the Body tab, a
                // recording): never more than the cap, whatever the stream's size.
                let room = operation.options.responseBodyCap - state.answer.keptOfStream.count
                if room > 0, operation.environment.events.subscriberCount > 0 {
                    state.answer.keptOfStream.append(data.count <= room ? data : data.prefix(room))
                }
                return .stream(stream, running: lead.task)
            }
            if let file = lead.file {
                if let limit = operation.options.maxFileBytes, state.record.bytes > limit {
                    return operation.stop(&state, task, TransportError(
                        code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                        message: "the answer is over the \(limit)-byte limit for its file (RequestOptions.maxFileBytes)"))
                }
                return .file(file)
            }
            if let limit = operation.options.maxResponseBytes, state.answer.body.count + data.count > limit {
                // Ended here: a server that sends without end cannot fill the memory.
                return operation.stop(&state, task, TransportError(
                    code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                    message: "the answer is over the \(limit)-byte limit (RequestOptions.maxResponseBytes; a destination file has none)"))
            }
            state.answer.body.append(data)
            return .kept
        }
    }

    /// Something on this side ends the lead `task`'s attempt with `error` (under the lock):
    /// its task is to be cancelled.
    func stop(_ state: inout State, _ task: Int, _ error: TransportError) -> BodySink? {
        state.machine.stop(lead: task, .local(error)).map(BodySink.stop)
    }

    /// Something on this side ends the attempt of `task` (a file that could not be written,
    /// a reader far behind): it fails with `error`, and its task is cancelled.
    private func failLocally(_ task: Int, _ error: TransportError) {
        if let running = transition(FailedLocally(task: task, error: error)) { cancelTasks([running]) }
    }

    /// The lead `task`'s attempt fails on this side with `error`: its task, to cancel (nil:
    /// it is over, or failed on this side already).
    struct FailedLocally: OperationTransition {
        let task: Int
        let error: TransportError

        func apply(to state: inout State, of operation: RequestOperation) -> TransportTask? {
            state.machine.failLocally(lead: task, error)
        }
    }
}
