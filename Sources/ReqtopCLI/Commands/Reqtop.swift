import ArgumentParser
import Foundation
import ReqtopApplication
import ProcessSignals
import RequestEventFormat
import RequestMonitor

/// `reqtop`: the root command. Each subcommand is a small type in its own file.
public struct Reqtop: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "reqtop",
        abstract: "Run HTTP requests as operations with retries and backoff, and watch them.",
        discussion: """
        Without a terminal on stdout (or with --no-tui) every command prints its events as JSON \
        lines on stdout and a one-line summary on stderr.

        Exit status: 0 when every operation succeeded, 1 when any failed or was cancelled, \
        2 for bad usage or bad input.
        """,
        version: "0.1.0",
        subcommands: [DemoCommand.self, RunCommand.self, AttachCommand.self, ReplayCommand.self, ExportCommand.self, ServeCommand.self, DiffCommand.self, WhatIfCommand.self, ProxyCommand.self]
    )

    public init() {}
}

/// The process entry point: parses, runs, and maps every outcome to the documented exit
/// status (ArgumentParser's own usage errors exit 64; ours is 2).
public enum ReqtopMain {
    public static func main(_ arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        if let usage = usageError(arguments) {
            SignalCenter.stopHolding()
            printError(usage)
            exit(2)
        }
        do {
            var command = try Reqtop.parseAsRoot(arguments)
            // A session takes the Ctrl-C that came while it set up (see SignalCenter);
            // any other command lets such a signal have its usual effect.
            if !(command is RunsASession) { SignalCenter.stopHolding() }
            try command.run()
            exit(0)
        } catch let error as PlanError {
            printError("reqtop: \(error)")
            exit(2)
        } catch let error as InputError {
            printError("reqtop: \(error.message)")
            exit(2)
        } catch let code as ExitCode {
            exit(code.rawValue)
        } catch {
            let code = Reqtop.exitCode(for: error)
            if code == .success {
                Reqtop.exit(withError: error)
            }
            let message = Reqtop.fullMessage(for: error)
            printError(message.hasPrefix("Error: ") ? "reqtop: " + message.dropFirst(7) : message)
            if code == .validationFailure { exit(2) }
            exit(code.rawValue)
        }
    }

    /// What ArgumentParser lets pass with status 0 but is a usage error: no command at all
    /// (a script that lost its argument must not "succeed"), and `help` for a command that
    /// does not exist.
    static func usageError(_ arguments: [String]) -> String? {
        let names = Reqtop.configuration.subcommands.map { $0._commandName }
        if arguments.isEmpty {
            return Reqtop.helpMessage() + "\n\nreqtop: no command given; use one of: \(names.joined(separator: ", "))"
        }
        if arguments.first == "help", arguments.count > 1, !names.contains(arguments[1]) {
            return "reqtop: help: no command '\(arguments[1])'; the commands are: \(names.joined(separator: ", "))"
        }
        return nil
    }

    /// Every message for a person on stderr: control characters a plan, a recording or a
    /// server put in it are written out (``TerminalText``), never sent to the terminal.
    static func printError(_ text: String) {
        ErrorOutput.print(text)
    }
}

/// A command that sends requests under a session which handles SIGINT, SIGTERM and SIGHUP
/// itself (cancelling what runs, printing the summary, closing the recording): a signal
/// that arrives before the session has registered is held for it.
protocol RunsASession {}

