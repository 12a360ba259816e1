@testable import RequestMonitor
import Foundation
import RequestOperations

extension QueueModel {
    /// A model of one operation's events (attempt 1), applied in the order given — not
    /// necessarily time order, as a recording may have them.
    static func oneOperation(_ id: String, source: String, _ events: [(TimeInterval, RequestEvent.Payload)]) -> QueueModel {
        var model = QueueModel(source: source)
        for (time, payload) in events {
            model.apply(RequestEvent(time: time, operationID: id, attempt: 1, payload: payload))
        }
        return model
    }
}
