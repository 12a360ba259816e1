@testable import RequestMonitor
import RequestOperations
import XCTest

/// Where the table draws things: bars inside their column, values under their heading at
/// every width.
extension MonitorViewTests {
    /// Found by libFuzzer: a recording whose attempt starts before its operation was queued
    /// (events need not be in time order) trapped the Timing tab ("Negative count not
    /// allowed"), and the table drew that bar left of the TIMELINE column.
    func testAnAttemptBeforeItsQueueTimeIsDrawnInsideItsColumns() {
        let model = QueueModel.oneOperation("odd", source: "odd recording", [
            (5, .queued(method: "GET", url: "http://api.test/x", headers: [:], maxAttempts: 3)),
            (1, .started),
            (1, .taskCreated(taskIdentifier: 1, url: "http://api.test/x")),
            (6, .taskCompleted(error: nil)),
            (6, .finished(outcome: .success, status: 200, attempts: 1, duration: 1, reason: nil)),
        ])
        let table = render(model)
        let row = line(table, containing: "odd")
        let header = line(table, containing: "TIMELINE")
        let column = header.range(of: "TIMELINE")!.lowerBound.utf16Offset(in: header)
        XCTAssertEqual(Array(row.utf16).prefix(column).contains(Array("█".utf16)[0]), false, "no bar left of TIMELINE:\n\(table.text)")
        var state = MonitorState()
        state.screen = .detail(id: "odd", tab: .timing)
        XCTAssert(render(model, state: state).text.contains("attempt 1"))
    }
}

extension MonitorViewTests {
    /// Before: at 60–79 columns values sat under the wrong heading and the header ran over
    /// its clock; at 200 columns ids were cut at 12 characters however wide the screen.
    func testAtEveryWidthFromSixtyToThreeHundredEachValueStaysUnderItsHeading() {
        var model = scriptedModel()
        model.apply(RequestEvent(time: 9.6, operationID: "w2-download~2", attempt: 1,
                                 payload: .queued(method: "OPTIONS", url: "http://api.test:8080/a/long/path/to/something?x=1", headers: [:], maxAttempts: 3)))
        for width in 60...300 {
            let grid = render(model, width: width, height: 20)
            // Lines padded to the width (the text form drops trailing spaces).
            let lines = grid.text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { Array($0) + Array(repeating: Character(" "), count: max(0, width - $0.count)) }
            XCTAssert(String(lines[0]).trimmingCharacters(in: .whitespaces).hasSuffix("t=10.0s"), "the clock whole at \(width): \(String(lines[0]))")
            let visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: 10)
            let columns = MonitorView(model: model, state: MonitorState(), visible: visible, theme: Theme(), now: 10).columns(width: width)
            XCTAssertLessThanOrEqual(columns.reduce(1) { $0 + $1.width + 1 }, width + 1, "the columns fit \(width)")
            var x = 1
            for column in columns {
                let heading = String(lines[2][x..<min(width, x + column.width)]).trimmingCharacters(in: .whitespaces)
                XCTAssertEqual(heading, column.title, "width \(width): heading over its own column")
                for line in lines[3..<(3 + model.rows.count)] where x + column.width < width {
                    XCTAssertEqual(line[x + column.width], " ", "width \(width): nothing runs past \(column.title): \(String(line))")
                }
                x += column.width + 1
            }
            if width >= 200 {
                XCTAssert(grid.text.contains("w2-download~2"), "a whole id at \(width)")
            }
        }
    }
}

extension MonitorViewTests {
    /// A proxy's rows name the program that sent each request (#44); a table without such
    /// rows has no PROGRAM column, and a narrow one leaves it out before HOST.
    func testThePROGRAMColumnShowsWhoSentAProxiedRequest() {
        var model = QueueModel(source: "proxy")
        var options = RecordedOptions()
        options.origin = "python3 4242"
        model.apply(RequestEvent(time: 1, operationID: "c1-r1", attempt: 1,
                                 payload: .queued(method: "GET", url: "http://api.test/orders", headers: [:], maxAttempts: 1, options: options)))
        let table = render(model, width: 160, height: 12)
        let header = line(table, containing: "PROGRAM")
        let row = line(table, containing: "c1-r1")
        let column = header.range(of: "PROGRAM")!.lowerBound.utf16Offset(in: header)
        XCTAssertEqual(row.utf16.dropFirst(column).prefix(12).map { Character(UnicodeScalar($0)!) }.map(String.init).joined(), "python3 4242", table.text)
        XCTAssertFalse(render(scriptedModel(), width: 160, height: 12).text.contains("PROGRAM"), "only proxied rows bring the column")
        XCTAssertFalse(render(model, width: 64, height: 12).text.contains("PROGRAM"), "narrow: left out")
    }
}

extension MonitorViewTests {
    /// A merged view (`attach --all`, #45): each row's program from its events, narrowed by
    /// its name before its pid, and the Hosts screen's PROGRAMS panel.
    func testAMergedViewNamesEachRowsProgramAndListsThePrograms() {
        var model = QueueModel(source: "attach")
        for (pid, name) in [(4121, "reqtop demo"), (4122, "checkout-worker")] {
            model.apply(RequestEvent(time: 1, operationID: "\(pid)/w1-login", attempt: 1,
                                     payload: .queued(method: "GET", url: "http://api.test/orders", headers: [:], maxAttempts: 1),
                                     program: "\(name) \(pid)"))
        }
        let wide = render(model, width: 160, height: 12)
        XCTAssert(line(wide, containing: "4121/w1-login").contains("reqtop demo 4121"), wide.text)
        XCTAssert(line(wide, containing: "4122/w1-login").contains("checkout-worker 4122"), wide.text)
        // Narrow: the name gives way, the pid stays.
        let narrow = render(model, width: 104, height: 12)
        XCTAssert(narrow.text.contains("PROGRAM"), narrow.text)
        XCTAssert(line(narrow, containing: "4122/w1-login").contains("… 4122"), narrow.text)
        XCTAssertEqual(MonitorView.fitKeepingPID("checkout-worker 4122", 12, ellipsis: "…"), "checko… 4122")
        XCTAssertEqual(MonitorView.fitKeepingPID("curl", 12, ellipsis: "…"), "curl        ")

        var state = MonitorState()
        state.screen = .hosts
        state.programs = [ProgramLine(label: "reqtop demo 4121", state: .attached, live: 3, eventsPerSecond: 2000, faults: 1, readOnly: false),
                          ProgramLine(label: "checkout-worker 4122", state: .ended, live: 0, eventsPerSecond: 0, faults: 0, readOnly: true)]
        let hosts = render(model, state: state, width: 120, height: 30)
        let first = line(hosts, containing: "reqtop demo 4121")
        XCTAssert(first.contains("attached") && first.contains("2000") && first.contains("taken"), hosts.text)
        let second = line(hosts, containing: "checkout-worker 4122")
        XCTAssert(second.contains("ended") && second.contains("refused"), hosts.text)
    }
}
