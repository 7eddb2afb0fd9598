"""servesim.Error: a command's bad input, as the command line reports it."""


class Error(Exception):
    """Bad input to a servesim command: the message the command line prints, and where the
    problem is: FILE and LINE (a file's; "" and 0 for a flag), FIELD (the flag or column, without
    dashes) and REASON. FIELD_PATH names the setting as servesim's configuration does
    ("scheduler.max_num_seqs", "kv_transfer.offloading_size_gib"), whatever its spelling: code
    that acts on an error tests it, not FIELD; it is FIELD where the error is no setting's (a
    column of a file, a policy's return value)."""

    def __init__(self, message, file="", line=0, field="", reason="", field_path=""):
        super().__init__(message)
        self.file = str(file)  # a path-like as its text
        self.line = line
        self.field = field
        self.reason = reason or message
        self.field_path = field_path or field
