/// Bad input that is not a plan's: a message that says what was wrong; exit status 2.
package struct InputError: Error {
    package var message: String
    package init(message: String) {
        self.message = message
    }
}
