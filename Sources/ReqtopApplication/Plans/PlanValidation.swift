import Foundation

/// A plan checked as `run` would check it, without running it: parsed, ordered by
/// `dependsOn`, and every request built. For programs that check plans (and for the parser
/// fuzzers in `ParserFuzzing`, which need a public door to the parser).
public enum PlanValidation {
    /// What is wrong with the plan, as `run` would say it; `nil` when it would run.
    public static func problem(in data: Data, file: String) -> String? {
        do {
            let plan = try PlanParser(file: file).parse(data)
            let faultServer = URL(string: "http://127.0.0.1:9")!
            for request in plan.requests { _ = request.urlRequest(faultServer: faultServer) }
            return nil
        } catch {
            return "\(error)"
        }
    }
}
