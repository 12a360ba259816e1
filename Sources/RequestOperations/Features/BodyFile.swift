import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A request body read from a file as it is sent (``RequestOptions/bodyFile``): never held
/// whole in memory. Each attempt opens the file afresh, so a retry — and a 307/308 on a
/// transport that re-sends bodies — sends it from its first byte. The length is the file's
/// size when the attempt starts (`Content-Length`, where the transport can send it with a
/// stream; chunked where not), so a server knows what to expect.
public enum BodyFile {
    /// `request` with `file` as its body stream and length; throws why the file cannot be one.
    static func attach(_ file: URL, to request: inout RequestMessage, withLength: Bool) throws {
        let size = try size(of: file)
        guard let stream = InputStream(url: file) else { throw BodyFileError(file, "cannot be opened") }
        request.body = .stream(BodyStream(stream))
        // A size of 0 is not said as a length: files in /proc and /sys stat as 0 bytes and
        // read as more (NIO sent /proc/self/status as an empty body). Unsaid, the body is
        // sent chunked, as long as it reads; an empty file still sends nothing.
        request.setValue(withLength && size > 0 ? String(size) : nil, forField: "Content-Length")
    }

    /// A fresh stream of `file`, for a redirect that sends the body again.
    static func reopen(_ file: URL) -> RequestBody {
        guard (try? size(of: file)) != nil, let stream = InputStream(url: file) else { return .none }
        return .stream(BodyStream(stream))
    }

    /// The size of a readable regular file; throws, naming the file, for anything else (a
    /// folder, a device or pipe with no end, a file that is missing or not readable).
    public static func size(of file: URL) throws -> Int {
        var info = stat()
        guard stat(file.path, &info) == 0 else {
            throw BodyFileError(file, errno == ENOENT ? "does not exist" : "cannot be read: \(String(cString: strerror(errno)))")
        }
        let kind = info.st_mode & S_IFMT
        guard kind != S_IFDIR else { throw BodyFileError(file, "is a folder") }
        guard kind == S_IFREG else { throw BodyFileError(file, "is not a regular file (a device or pipe has no end to send)") }
        guard access(file.path, R_OK) == 0 else { throw BodyFileError(file, "cannot be read: \(String(cString: strerror(errno)))") }
        return Int(info.st_size)
    }
}

/// Why a body file cannot be sent.
public struct BodyFileError: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ file: URL, _ problem: String) {
        description = "the body file \(file.path) \(problem)"
    }
}
