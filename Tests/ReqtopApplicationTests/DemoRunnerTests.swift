@testable import ReqtopApplication
import RequestOperations
import XCTest

/// The demo starts a new wave every few seconds until `q`, for as long as a person leaves
/// it running: what it remembers must be one wave's.
final class DemoRunnerTests: XCTestCase {
    func testAWaveForgetsTheOperationsOfTheWavesBeforeIt() throws {
        let queue = RequestQueue(maxConcurrentRequests: 4, earlyRetry: nil)
        let demo = try DemoRunner(queue: queue)
        defer { demo.stopServers() }
        func wave(_ number: Int) -> DemoScenario {
            let steps = (0..<5).map { index in
                DemoScenario.Step(at: 0, action: .send(DemoScenario.DemoRequest(id: "w\(number)-\(index)", host: .api, path: "/echo")))
            }
            return DemoScenario(name: "test", summary: "five echoes", steps: steps)
        }
        for number in 1...3 {
            demo.play(wave(number), onSend: { _ in }, shouldStop: { false })
            queue.waitUntilAllOperationsAreFinished()
        }
        XCTAssertEqual(demo.rememberedOperations, 5, "the last wave's five, not all fifteen")
    }
}
