/// Everything that changes what the person chose: the keys (the ``KeyMap`` turns keys into
/// these) and the answers that come back from effects. ``MonitorUpdate`` carries them out.
public enum MonitorAction: Sendable, Equatable {
    case up, down, pageUp, pageDown, top, bottom
    case open, back, nextTab, previousTab, toggleHosts
    /// The Hosts screen of a merged view: one line per host and program, or per host (`P`).
    case splitHostsByProgram
    case retry, cancel, cancelAll, togglePause, releaseBatches
    /// Take the selected request out as a curl command line (`y`).
    case copyCurl
    /// Change the selected request in the person's editor and send it again (`e`).
    case editRequest
    /// Mark the selected operation, or compare it with the one marked (`=`).
    case compare
    /// In the Body tab: open the find prompt (`/`), type into it, go to the next or the
    /// previous line that matches (`n`, `N`).
    case startFind, findInput(FilterKey), findNext, findPrevious
    /// On the Hosts screen: force the selected host's circuit breaker open, or close it.
    case isolateHost, closeCircuit
    /// On the Hosts screen: inject a 503 into every request to the selected host, or stop (`!`);
    /// anywhere: remove every injected fault (`Z`).
    case toggleFault, clearFaults
    case startFilter, toggleFollow, cycleSort, toggleHelp, quit
    /// Open the breakpoint prompt (`B`), prefilled with the filter.
    case startBreakpoint
    /// On an operation stopped at a breakpoint: send it as it is (`s`), open the answer
    /// prompt (`a`), fail it with a lost connection (`f`).
    case sendAtBreakpoint, startAnswer, failAtBreakpoint
    /// A key typed into the breakpoint or answer prompt.
    case promptInput(FilterKey)
    /// Open or close the Breakpoints screen (`L`); on it, remove the selected one (`d`).
    case toggleBreakpoints, removeBreakpoint
    /// Open the "go to time" prompt of a replay.
    case startTimeJump
    /// A key typed into the "go to time" prompt.
    case timeInput(FilterKey)
    case confirm(Bool)
    case playback(PlaybackAction)
    /// A key typed into the filter: a character, backspace, enter or escape.
    case filterInput(FilterKey)
    /// The answer to a command the update asked for (see ``MonitorEffect``).
    case answered(MonitorCommand, CommandAnswer)
    /// Ask this of the queue (an edited request to send: the editor ran outside the update).
    case send(MonitorCommand)
    /// What became of a copy (``MonitorEffect/copy(text:name:body:)``), for the bottom line.
    case copied(CommandAnswer)
    /// Someone else paused or resumed the queue (another monitor of an attached program).
    case pausedElsewhere(Bool)

    public enum FilterKey: Sendable, Equatable {
        case character(Character), backspace, enter, escape
    }
}
