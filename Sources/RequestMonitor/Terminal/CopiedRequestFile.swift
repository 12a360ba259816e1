import Foundation
import RequestArchive

/// `y` writes its copy where a person can find it again: `$TMPDIR/reqtop-curl/ID.sh` (and the
/// body beside it as `ID.body` when it is binary), in a folder only this user can enter. The
/// file is a script its owner alone can run (`#!/bin/sh`, 0700): `./ID.sh` sends it again.
extension CopiedRequest {
    /// Writes the copy, returning its path. Throws, naming the folder, when the folder is
    /// another user's, a link or open to others — in a shared `/tmp` it may have been made
    /// first by someone else, with links planted under the names reqtop writes.
    static func write(_ text: String, name: String, body: Data?, in folder: String = CopiedRequest.folder) throws -> String {
        try PrivateFolder.make(folder)
        if let body { try PrivateFolder.writeNew(body, to: path(for: name, suffix: ".body", in: folder)) }
        let path = path(for: name, in: folder)
        let script = "#!/bin/sh\n" + text + (text.hasSuffix("\n") ? "" : "\n")
        try PrivateFolder.writeNew(Data(script.utf8), to: path, mode: 0o700)
        return path
    }
}
