"""The exceptions of the hurray package.

Every refusal of the format's rules carries the rule id of our catalog
(``rule``, e.g. ``"QNT-NF4-06"``) and the byte offset of the offending field
(``offset``) when the library knows one, exactly as the C++ library reports
them (``hurray validate`` prints the same pair).
"""

class HurrayError(Exception):
    """Base class of every error this package raises on its own."""


class InvalidDescriptorError(HurrayError, ValueError):
    """Bytes or values that break a rule of the Hurray specification."""

    def __init__(self, message, rule=None, offset=None):
        super().__init__(message)
        self.rule = rule
        self.offset = offset


class StreamError(InvalidDescriptorError):
    """A stream that ended or failed inside a tensor (DESC-HDR-01,
    STREAM-EOF-BUFFER, STREAM-IO)."""


class BufferError(InvalidDescriptorError):
    """A buffer whose size does not match what the descriptor needs
    (the BUF-SZ-* rules). Not the builtin BufferError (which is about the
    buffer protocol itself)."""


class CopyRequiredError(HurrayError, ValueError):
    """``copy=False`` asked of a conversion that must copy (a cast to
    another dtype), as numpy 2's ``copy=`` contract says."""


class UnsupportedError(HurrayError, NotImplementedError):
    """Valid input this package does not handle (e.g. a numpy array of a
    sub-byte type)."""


class InternalError(HurrayError, RuntimeError):
    """A bug in hurray-cpp: please report it."""


class FileError(HurrayError, OSError):
    """A file that cannot be opened, read or written."""

    def __init__(self, message, rule=None, offset=None):
        super().__init__(message)
        self.rule = rule
        self.offset = offset
