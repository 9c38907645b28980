"""The exceptions of the hurray package.

Every refusal of the format's rules carries the rule id of our catalog
(``rule``, e.g. ``"QNT-NF4-06"``) and the byte offset of the offending field
(``offset``) when the library knows one, exactly as the C++ library reports
them (``hurray validate`` prints the same pair).
"""

import builtins


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


class BufferError(InvalidDescriptorError, builtins.BufferError):
    """A buffer whose size does not match what the descriptor needs
    (the BUF-SZ-* rules)."""


class FileError(HurrayError, OSError):
    """A file that cannot be opened, read or written."""

    def __init__(self, message, rule=None, offset=None):
        super().__init__(message)
        self.rule = rule
        self.offset = offset
