import Foundation

/// What the person has chosen: selection, filter, sort, follow, which screen is showing.
/// Separate from ``QueueModel`` (what happened) so that replays and tests share one model.
public struct MonitorState: Sendable, Equatable {
    public enum Screen: Sendable, Equatable {
        case table
        case detail(id: String, tab: DetailTab)
        /// One row per host (`H`).
        case hosts
        /// Two operations side by side (`=` on one, then on another).
        case compare(left: String, right: String)
        /// Every breakpoint set (`L`): on, off, removed here.
        case breakpoints
    }

    public enum DetailTab: String, Sendable, CaseIterable {
        case events = "Events", request = "Request", response = "Response", body = "Body", retries = "Retries", timing = "Timing"
    }

    public enum Sort: String, Sendable, CaseIterable {
        case arrival, state, duration, host
    }

    /// A question waiting for y/n.
    public enum Confirmation: Sendable, Equatable {
        case cancel(id: String)
        case cancelAll
    }

    public var screen = Screen.table
    /// The first line shown in the Body tab and the compare screen.
    public var bodyScroll = 0
    /// The operation `=` marked, to compare with the next one `=` is pressed on.
    public var compareMark: String?
    /// What `/` in the Body tab looks for (lower-cased; nil: nothing), and the word being typed.
    public var find: String?
    public var findDraft: String?
    public var selectedID: String?
    /// The host selected on the Hosts screen (nil: the first). Kept by name, as the table
    /// keeps its row by id, so a host that moves in the busiest-first order stays selected.
    public var selectedHost: String?
    /// The breakpoint selected on the Breakpoints screen (by number).
    public var selectedBreakpoint: Int?
    /// The first visible row of the table.
    public var scroll = 0
    public var filter = ""
    /// The filter being typed, while `/` is active.
    public var filterDraft: String?
    /// The time being typed after `:` in a replay (nil when the prompt is closed).
    public var timeDraft: String?
    /// The breakpoint or answer prompt being typed into (nil when closed).
    public var commandPrompt: CommandPrompt?
    public var sort = Sort.arrival
    /// Keep the newest operation selected and in view.
    public var follow = true
    public var paused = false
    /// Faults are injected into the queue shown: the header says so.
    public var faultsOn = false
    /// The programs of a merged view (`attach --all`): the Hosts screen's PROGRAMS panel.
    public var programs: [ProgramLine] = []
    /// The Hosts screen shows one line per host and program (`P`, a merged view only).
    public var hostsByProgram = false
    public var showHelp = false
    /// The first help line shown, where the help is taller than the screen (↑↓ PgUp PgDn).
    public var helpScroll = 0
    public var confirmation: Confirmation?
    /// A short message on the bottom line ("retrying w1-flaky"), with when it was set.
    public var flash: String?
    /// Commands asked for and answered so far (answers come back in order), and how many had
    /// been asked when the monitor last put up a message of its own: an answer to an older
    /// command does not cover a newer message (`+` then `X` shows what `X` said).
    var commandsAsked = 0
    var commandsAnswered = 0
    var flashAfterCommand = 0
    /// A replay's speed and position, for the header.
    public var playback: PlaybackStatus?
    /// Set when the source has ended ("ENDED: every operation finished, q quits"): the header
    /// says so and its clock and rate stand still.
    public var ended: String?
    public var quit = false

    public init() {}
}

/// What the header says of the source in place of FOLLOW: a replay's speed and position, an
/// attached program's name. `saysPaused`: the text says itself that it is stopped (a replay
/// paused or at its end), so the header adds no PAUSED of its own.
public struct PlaybackStatus: Sendable, Equatable, ExpressibleByStringLiteral {
    public var text: String
    public var saysPaused: Bool

    public init(_ text: String, saysPaused: Bool = false) {
        self.text = text
        self.saysPaused = saysPaused
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }
}

/// A prompt whose Enter sends a command: a breakpoint's match (`B`), or the status and body
/// that answer an operation stopped at a breakpoint (`a`).
public struct CommandPrompt: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case breakpoint
        case answer(operation: String)
    }

    public var kind: Kind
    public var text: String
    /// The text is a suggestion (a status to answer with, the filter to break on): like
    /// selected text, the first character typed replaces it; Backspace keeps it to edit.
    public var suggested: Bool

    public init(kind: Kind, text: String, suggested: Bool = false) {
        (self.kind, self.text, self.suggested) = (kind, text, suggested && !text.isEmpty)
    }

    /// What the bottom line says before the text.
    var label: String {
        switch kind {
        case .breakpoint: "break before sending:"
        case .answer(let id): "answer \(id) with (status [body]):"
        }
    }

    /// The hint after the text.
    var hint: String {
        if suggested { return "(typing replaces it, Backspace edits it; Enter takes it, Esc cancel)" }
        return switch kind {
        case .breakpoint: "(Enter set; \"after …\" stops after the answer; empty removes yours; Esc cancel)"
        case .answer: "(Enter answer without sending, Esc cancel; e.g. 503, or 200 {\"ok\":true})"
        }
    }
}
