"""servesim.Error: a command's bad input, as the command line reports it."""


class Error(Exception):
    """Bad input to a servesim command: the message the command line prints, and where the
    problem is: FILE and LINE (a file's; "" and 0 for a flag), FIELD (the flag or column, without
    dashes) and REASON."""

    def __init__(self, message, file="", line=0, field="", reason=""):
        super().__init__(message)
        self.file = str(file)  # a path-like as its text
        self.line = line
        self.field = field
        self.reason = reason or message
