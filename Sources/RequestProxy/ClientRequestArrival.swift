/// How far a proxy's client's request has come, as its exchange sees it: the answer is
/// written only once the request is whole, and not at all to a client that will not finish.
enum ClientRequestArrival {
    /// Its body still streams (the answer waits).
    case streaming
    /// It came whole, or an answer that ended early let go of the rest.
    case whole
    /// It never will: the client went away, or sent what could not be read (answered 400).
    case broken
}
