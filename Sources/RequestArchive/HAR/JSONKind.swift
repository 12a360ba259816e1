import Foundation

/// What kind of JSON value a document holds at a place: what a message about a field of the
/// wrong type says it found. Read from the document itself, never from `DecodingError`'s
/// words (which differ between Foundation versions and platforms).
enum JSONKind: Equatable, Sendable {
    case string, number, boolean, null, object, array

    /// "a string", "an object": as the messages say it.
    var said: String {
        switch self {
        case .string: "a string"
        case .number: "a number"
        case .boolean: "a boolean"
        case .null: "null"
        case .object: "an object"
        case .array: "an array"
        }
    }

    /// The kind of the value at `path` under the value `decoder` reads (a path relative to
    /// it), or nil when it cannot be read there.
    static func at(_ path: [CodingKey], under decoder: Decoder) -> JSONKind? {
        (try? Value(from: decoder))?.kind(at: path[...])
    }

    /// The kind of the value at `path` in a whole JSON document.
    static func at(_ path: [CodingKey], in document: Data) -> JSONKind? {
        (try? JSONDecoder().decode(Value.self, from: document))?.kind(at: path[...])
    }

    /// A JSON value as far as its kinds go: enough to walk a path and say what is there.
    private enum Value: Decodable {
        case leaf(JSONKind)
        case object([String: Value])
        case array([Value])

        init(from decoder: Decoder) throws {
            if var array = try? decoder.unkeyedContainer() {
                var values: [Value] = []
                while !array.isAtEnd { values.append(try array.decode(Value.self)) }
                self = .array(values)
                return
            }
            if let object = try? decoder.container(keyedBy: AnyKey.self) {
                var values: [String: Value] = [:]
                for key in object.allKeys { values[key.stringValue] = try object.decode(Value.self, forKey: key) }
                self = .object(values)
                return
            }
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .leaf(.null)
            } else if (try? single.decode(Bool.self)) != nil {
                self = .leaf(.boolean)
            } else if (try? single.decode(Double.self)) != nil {
                self = .leaf(.number)
            } else {
                _ = try single.decode(String.self)
                self = .leaf(.string)
            }
        }

        func kind(at path: ArraySlice<CodingKey>) -> JSONKind? {
            guard let key = path.first else {
                switch self {
                case .leaf(let kind): return kind
                case .object: return .object
                case .array: return .array
                }
            }
            switch self {
            case .object(let values): return values[key.stringValue]?.kind(at: path.dropFirst())
            case .array(let values):
                guard let index = key.intValue, values.indices.contains(index) else { return nil }
                return values[index].kind(at: path.dropFirst())
            case .leaf: return nil
            }
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
