import ProcessSignals
import ReqtopCLI

// Before any thread exists: signals are then blocked everywhere and taken by one thread,
// so a Ctrl-C or SIGTERM is never lost (see SignalCenter). Held until the command is
// known: a session takes one that came while it was setting up.
SignalCenter.install(holding: true)
ReqtopMain.main()
