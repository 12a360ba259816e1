// reqtop-monitor-bench: the monitor's model and view at scale, without a terminal.
//
// Builds 100,000 operations from 1,000,000 events (10 each: queued, started, taskCreated,
// response, data, taskCompleted, retryScheduled, started, ..., finished), then measures:
//   - events per second through QueueModel.apply, against a reference run in the same
//     process that only appends the same events to an array;
//   - time per frame of MonitorView.render at 200×50, and of recomputing the visible rows
//     (done only when the model, filter or sort changes);
//   - memory per finished operation (resident set size before and after).
//
//   swift run -c release reqtop-monitor-bench [--operations N] [--memory-only]
import Foundation
import RequestMonitor
import RequestOperations

func argument(_ name: String, default value: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let number = Int(arguments[index + 1]) else { return value }
    return number
}

func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
          let pages = Int(text.split(separator: " ")[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func seconds(_ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

let operations = argument("--operations", default: 100_000)
/// One operation's 10 events, strings made for it as a decoder or the engine would.
func operationEvents(_ index: Int) -> [RequestEvent] {
    let id = "op-\(index)"
    let t = Double(index) * 0.001
    let url = "http://api-\(index % 7).test:8080/items/\(index)?page=\(index % 13)"
    return [
        RequestEvent(time: t, operationID: id, attempt: 1, payload: .queued(method: "GET", url: url, headers: ["Accept": "application/json"], maxAttempts: 3)),
        RequestEvent(time: t + 0.001, operationID: id, attempt: 1, payload: .started),
        RequestEvent(time: t + 0.001, operationID: id, attempt: 1, payload: .taskCreated(taskIdentifier: index * 2, url: url)),
        RequestEvent(time: t + 0.004, operationID: id, attempt: 1, payload: .response(status: 503, headers: ["Retry-After": "1"], expectedBytes: 15)),
        RequestEvent(time: t + 0.005, operationID: id, attempt: 1, payload: .taskCompleted(error: nil)),
        RequestEvent(time: t + 0.005, operationID: id, attempt: 1, payload: .retryScheduled(delay: 0.5, reason: "status 503; attempt 1 of 3; backoff 0.5s")),
        RequestEvent(time: t + 0.505, operationID: id, attempt: 2, payload: .started),
        RequestEvent(time: t + 0.509, operationID: id, attempt: 2, payload: .response(status: 200, headers: ["Content-Type": "application/json"], expectedBytes: 2048)),
        RequestEvent(time: t + 0.510, operationID: id, attempt: 2, payload: .data(bytes: 2048)),
        RequestEvent(time: t + 0.510, operationID: id, attempt: 2, payload: .finished(outcome: .success, status: 200, attempts: 2, duration: 0.51, reason: nil)),
    ]
}

// Memory first, in a fresh process: events made and applied an operation at a time and then
// dropped, as they are live, so what the rows keep (strings included) is what is counted.
let before = residentBytes()
var model = QueueModel(source: "bench")
for index in 0..<operations { model.apply(operationEvents(index)) }
let after = residentBytes()
precondition(model.counts[.succeeded] == operations)

if CommandLine.arguments.contains("--memory-only") {
    print(String(format: "memory: %.2f KiB per finished operation (goal: at most 1 KiB)", Double(after - before) / Double(operations) / 1024))
    exit(0)
}
var events: [RequestEvent] = []
events.reserveCapacity(operations * 10)
for index in 0..<operations { events += operationEvents(index) }
print("reqtop-monitor-bench: \(operations) operations, \(events.count) events of \(MemoryLayout<RequestEvent>.stride) bytes each (inline)")

var reference: [RequestEvent] = []
let referenceTime = seconds {
    reference.reserveCapacity(events.count)
    for event in events { reference.append(event) }
}
reference = []

var timedModel = QueueModel(source: "bench")
let modelTime = seconds { timedModel.apply(events) }
precondition(timedModel.counts[.succeeded] == operations)
timedModel = QueueModel(source: "bench")

print(String(format: "model: %.0f events/s (%.2f s); reference (append only): %.0f events/s; ratio %.2f",
             Double(events.count) / modelTime, modelTime, Double(events.count) / referenceTime, referenceTime / modelTime))
print(String(format: "memory: %.2f KiB per finished operation (10 events each, kept packed for the detail view; goal: at most 1 KiB)",
             Double(after - before) / Double(operations) / 1024))

let now = model.latest
var visible: [Int] = []
let filterTime = seconds { visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: now) }
let filteredTime = seconds { _ = VisibleRows.compute(model, filter: "status:5xx api-3", sort: .arrival, now: now) }
let sortedTime = seconds { _ = VisibleRows.compute(model, filter: "", sort: .duration, now: now) }
var state = MonitorState()
state.selectedID = model.rows.last?.id
state.follow = false
let frames = 200
var grid = CellGrid(width: 0, height: 0)
let frameTime = seconds {
    for frame in 0..<frames {
        state.selectedID = model.rows[model.rows.count - 1 - frame].id
        grid = MonitorView(model: model, state: state, visible: visible, theme: Theme(), now: now).render(width: 200, height: 50)
    }
} / Double(frames)
precondition(grid.text.contains("op-"))
print(String(format: "frame at 200x50: %.2f ms (goal: at most 5 ms)", frameTime * 1000))
var hostsState = state
hostsState.screen = .hosts
let hostsFrame = best {
    grid = MonitorView(model: model, state: hostsState, visible: visible, theme: Theme(), now: now).render(width: 200, height: 50)
}
precondition(grid.text.contains("api-3.test"))
print(String(format: "hosts screen at 200x50 (from the running tallies per host): %.2f ms", hostsFrame * 1000))

// Every filter kind over all rows, each the best of 5, beside the way text was matched
// before (Foundation's lower-cased contains on id, host and path per row): the reference.
func naive(_ word: String, in model: QueueModel) -> [Int] {
    model.rows.indices.filter { index in
        let row = model.rows[index]
        return row.id.lowercased().contains(word) || row.host.lowercased().contains(word) || row.path.lowercased().contains(word)
    }
}
func best(_ body: () -> Void) -> Double { (0..<5).map { _ in seconds(body) }.min()! }
for filter in ["api-3", "items/4242", "nothing-matches", "state:ok", "status:5xx", "method:get", "api-3 state:ok", "status:5xx api-3"] {
    var count = 0
    let time = best { count = VisibleRows.compute(model, filter: filter, sort: .arrival, now: now).count }
    print(String(format: "filter %-18@ %6d rows: %6.2f ms (goal: at most 5 ms)", "\"\(filter)\"", count, time * 1000))
}
// Header and body words at 100,000 rows with 1 KiB bodies: each row's response body
// (`responseBody`, as the engine sends it) and a request id header; one row in a hundred
// says "out of stock". A frame is 83 ms at the monitor's 12 frames a second.
var bodied = QueueModel(source: "bench")
for index in 0..<operations {
    let id = "op-\(index)", t = Double(index) * 0.001
    let filler = String(repeating: "x", count: 1024 - 80)
    let body = Data(#"{"sku":"A-\#(index)","state":"\#(index % 100 == 0 ? "out of stock" : "in stock")","pad":"\#(filler)"}"#.utf8)
    bodied.apply([
        RequestEvent(time: t, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://api-\(index % 7).test/items/\(index)",
                                                                            headers: ["X-Request-Id": "req-\(index)"], maxAttempts: 1)),
        RequestEvent(time: t, operationID: id, attempt: 1, payload: .started),
        RequestEvent(time: t, operationID: id, attempt: 1, payload: .response(status: 200, headers: ["Content-Type": "application/json"], expectedBytes: body.count)),
        RequestEvent(time: t, operationID: id, attempt: 1, payload: .responseBody(body: .bytes(body), totalBytes: body.count, truncated: false, mediaType: "application/json")),
        RequestEvent(time: t, operationID: id, attempt: 1, payload: .finished(outcome: .success, status: 200, attempts: 1, duration: 0.01, reason: nil)),
    ])
}
for filter in [#"body:"out of stock""#, "header:x-request-id=req-4242", #"!body:"in stock""#, #"body:"out of stock" host:api-3"#] {
    var count = 0
    let time = best { count = VisibleRows.compute(bodied, filter: filter, sort: .arrival, now: bodied.latest).count }
    print(String(format: "filter %-32@ %6d rows: %6.2f ms at 100k rows with 1 KiB bodies (a frame: 83 ms)", filter, count, time * 1000))
}
bodied = QueueModel(source: "bench")

for word in ["api-3", "nothing-matches"] {
    let new = best { _ = VisibleRows.compute(model, filter: word, sort: .arrival, now: now) }
    let old = best { _ = naive(word, in: model) }
    print(String(format: "text filter \"%@\": %.2f ms; the old way %.1f ms; %.0f× faster", word, new * 1000, old * 1000, old / new))
}
for sort in [MonitorState.Sort.state, .duration, .host] {
    let time = best { _ = VisibleRows.compute(model, filter: "", sort: sort, now: now) }
    print(String(format: "sort by %@: %.1f ms", "\(sort)", time * 1000))
}
print(String(format: "visible rows, recomputed only on change: %.1f ms all, %.1f ms filtered, %.1f ms sorted by duration",
             filterTime * 1000, filteredTime * 1000, sortedTime * 1000))

// While events keep coming: 10,000 events a second at the monitor's 12 frames a second is
// about 833 events per model change. Each change here applies 833 more events (new
// operations, 10 events each, as above) to the 100,000-row model, then recomputes the
// visible rows through the cache the monitor uses (a row's text match is kept; new and
// edited rows are matched) and draws a frame. p50 and p99 over 120 changes, per filter.
var busy = model
var nextOperation = operations
var pendingEvents: [RequestEvent] = []
@MainActor func moreEvents(_ count: Int) -> [RequestEvent] {
    while pendingEvents.count < count {
        let index = nextOperation
        nextOperation += 1
        let id = "op-\(index)", t = busy.latest + 0.0001
        let url = "http://api-\(index % 7).test:8080/items/\(index)?page=\(index % 13)"
        pendingEvents += [
            RequestEvent(time: t, operationID: id, attempt: 1, payload: .queued(method: "GET", url: url, headers: [:], maxAttempts: 3)),
            RequestEvent(time: t, operationID: id, attempt: 1, payload: .started),
            RequestEvent(time: t, operationID: id, attempt: 1, payload: .taskCreated(taskIdentifier: index, url: url)),
            RequestEvent(time: t, operationID: id, attempt: 1, payload: .response(status: 200, headers: [:], expectedBytes: 10)),
        ] + (0..<5).map { _ in RequestEvent(time: t, operationID: id, attempt: 1, payload: .data(bytes: 2)) } + [
            RequestEvent(time: t, operationID: id, attempt: 1, payload: .finished(outcome: .success, status: 200, attempts: 1, duration: 0.001, reason: nil)),
        ]
    }
    defer { pendingEvents.removeFirst(count) }
    return Array(pendingEvents.prefix(count))
}
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
for filter in ["api-3", "nothing-matches", "api-3 state:ok", "state:ok", ""] {
    var cache = VisibleRowsCache()
    _ = cache.compute(busy, filter: filter, sort: .arrival, now: busy.latest)
    var changes: [Double] = [], frames: [Double] = []
    for _ in 0..<120 {
        busy.apply(moreEvents(833))
        var rows: [Int] = []
        changes.append(seconds { rows = cache.compute(busy, filter: filter, sort: .arrival, now: busy.latest) })
        var frameState = MonitorState()
        frameState.filter = filter
        frames.append(seconds { grid = MonitorView(model: busy, state: frameState, visible: rows, theme: Theme(), now: busy.latest).render(width: 200, height: 50) })
    }
    print(String(format: "while 10,000 events/s arrive, filter %-18@ per model change p50 %.2f ms p99 %.2f ms; frame p50 %.2f ms p99 %.2f ms (goal: at most 5 ms)",
                 "\"\(filter)\"", percentile(changes, 0.5) * 1000, percentile(changes, 0.99) * 1000, percentile(frames, 0.5) * 1000, percentile(frames, 0.99) * 1000))
}

// Typing a filter a letter at a time: each keystroke is a new filter; the cache looks again
// only at the rows the shorter text matched. The slowest keystroke, per word typed.
for word in ["api-3", "items/4242", "nothing-matches"] {
    var cache = VisibleRowsCache()
    var slowest = 0.0, first = 0.0
    for length in 1...word.count {
        let typed = String(word.prefix(length))
        let time = seconds { _ = cache.compute(model, filter: typed, sort: .arrival, now: now) }
        if length == 1 { first = time }
        slowest = max(slowest, time)
    }
    print(String(format: "typing \"%@\" a letter at a time: slowest keystroke %.2f ms (the first letter %.2f ms) (goal: at most 5 ms)", word, slowest * 1000, first * 1000))
}

// The Body tab on a one-line JSON answer of 10 KB and of 10 MB (one row each, finished and
// packed as the model keeps it): the first frame lays the body out; each keystroke after it
// (a scroll) draws from the kept layout. The goal: a keystroke costs the same at 10 MB as at
// 10 KB. Before: the layout was made again on every frame (8–20 s a keystroke at 10 MB).
for size in [10_000, 10_000_000] {
    var bodyModel = QueueModel(source: "bench")
    let item = #"{"sku":"A-1","note":"in stock","n":12345},"#
    let body = Data(("[" + String(repeating: item, count: size / item.utf8.count) + #"{"end":true}]"#).utf8)
    bodyModel.apply([
        RequestEvent(time: 0, operationID: "big", attempt: 1, payload: .queued(method: "GET", url: "http://api.test/export", headers: [:], maxAttempts: 1)),
        RequestEvent(time: 0, operationID: "big", attempt: 1, payload: .started),
        RequestEvent(time: 0.1, operationID: "big", attempt: 1, payload: .response(status: 200, headers: ["Content-Type": "application/json"], expectedBytes: body.count)),
        RequestEvent(time: 0.2, operationID: "big", attempt: 1, payload: .responseBody(body: .bytes(body), totalBytes: body.count, truncated: false, mediaType: "application/json")),
        RequestEvent(time: 0.2, operationID: "big", attempt: 1, payload: .finished(outcome: .success, status: 200, attempts: 1, duration: 0.2, reason: nil)),
    ])
    var bodyState = MonitorState()
    bodyState.screen = .detail(id: "big", tab: .body)
    let rows = VisibleRows.compute(bodyModel, filter: "", sort: .arrival, now: 1)
    func frame() { grid = MonitorView(model: bodyModel, state: bodyState, visible: rows, theme: Theme(), now: 1).render(width: 200, height: 50) }
    let first = seconds(frame)
    var keystrokes: [Double] = []
    for step in 1...30 {
        bodyState.bodyScroll = step * 7
        keystrokes.append(seconds(frame))
    }
    precondition(grid.text.contains("\"sku\""))
    print(String(format: "Body tab, %@ one-line JSON: first frame (lays it out) %.1f ms; a keystroke after it p50 %.2f ms p99 %.2f ms",
                 size < 1_000_000 ? "10 KB" : "10 MB", first * 1000, percentile(keystrokes, 0.5) * 1000, percentile(keystrokes, 0.99) * 1000))
}
