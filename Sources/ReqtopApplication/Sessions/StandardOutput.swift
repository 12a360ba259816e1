#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Text to stdout with `write(2)`: a reader that went away (`reqtop attach --no-tui | head`)
/// ends the command quietly, as it ends `cat`. `FileHandle.write` traps on EPIPE once SIGPIPE
/// is ignored, which SwiftNIO does in any command that uses it.
package enum StandardOutput {
    package static func write(_ text: String) {
        write(bytes: Array(text.utf8))
    }

    package static func write(bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            // Read in place: a mutable view would copy the caller's batch first.
            let written = bytes.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                // EPIPE: nobody reads any more. Any other error: nothing more can be shown.
                exit(errno == EPIPE ? 0 : 1)
            }
            offset += written
        }
    }
}
