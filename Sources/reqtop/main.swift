import ProcessSignals
import ReqtopCLI

// Before any thread exists: signals are then blocked everywhere and taken by one thread,
// so a Ctrl-C or SIGTERM is never lost (see SignalCenter).
SignalCenter.install()
ReqtopMain.main()
