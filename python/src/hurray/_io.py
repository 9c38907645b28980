"""Reading and writing: .hrry files, bare tensor streams, the incremental
descriptor decoder, and ingest."""

import io
import os
import stat

from . import _hurray
from ._errors import FileError, StreamError
from ._tensor import Descriptor, Tensor

__all__ = ["save", "load", "open", "HrryFile", "StreamWriter",
           "StreamReader", "Decoder", "decode_descriptor", "ingest",
           "NEED_MORE", "DONE", "REJECTED"]

NEED_MORE, DONE, REJECTED = 0, 1, 2
_CHUNK = 1 << 20


# -- .hrry files -------------------------------------------------------------

def save(path, tensors, kv=None):
    """Writes ``{name: Tensor}`` as a .hrry file (sorted index, CRC-32C,
    optional KV metadata: str, int, float, bool, bytes or lists of them).

    Every tensor is validated strictly first, as a reader would. The file is
    created the one way the library creates files (a hidden temp beside
    ``path``, O_EXCL | O_NOFOLLOW, renamed over ``path`` once complete and
    synced), so a failure leaves nothing behind and never a half-written
    file, and a symlink at ``path`` is replaced, not written through.
    """
    out = _hurray.SafeOutputFile(os.fspath(path))
    try:
        builder = _hurray.HrryBuilder(out.write, with_kv=kv is not None)
        builder.begin()
        for tensor_name, tensor in tensors.items():
            builder.add(tensor_name, tensor._fields, tensor._buffers)
        for key, value in (kv or {}).items():
            builder.add_kv(key, value)
        builder.finish()
        out.commit()
    finally:
        out.discard()


class HrryFile:
    """A .hrry file opened for random access, checked whole when opened
    (header, index, KV section, every descriptor). Tensors are looked up by
    name.

    What ``open()`` promises: the file is validated once, at open, over a
    read-only map; a tensor's buffers are copied out of the map when the
    tensor is read (``f[name]``), into read-only memory the tensor owns, so
    no numpy array ever views the file. If another writer truncates the
    file meanwhile (a re-download rewriting it in place), the read that
    meets the missing bytes raises FileError: never a signal, and nothing
    half-read is returned. A file rewritten in place at the same size is
    read as it is at that moment (its data is not checked again). Only
    regular files are opened: a FIFO, device or directory raises FileError
    at once (a FIFO without a writer would otherwise block forever).
    Closing (``close()`` or the end of a ``with`` block) unmaps the file;
    tensors already read stay valid, any other use raises ValueError.
    """

    def __init__(self, path, permissive=False):
        path = os.fspath(path)
        _check_regular_file(path)
        self._file = _hurray.HrryFile.open(path, permissive)
        self._names = self._file.names()

    def _open_file(self):
        if self._file is None:
            raise ValueError("I/O operation on a closed hurray.HrryFile")
        return self._file

    closed = property(lambda self: self._file is None)

    @property
    def names(self):
        self._open_file()
        return list(self._names)

    @property
    def kv(self):
        return self._open_file().kv()

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"tensor names are str, not {type(name).__name__}")
        fields, buffers = self._open_file().tensor(name)
        return Tensor._from_parts(fields, buffers)

    def __contains__(self, name):
        self._open_file()
        return name in set(self._names)

    def __iter__(self):
        self._open_file()
        return iter(self._names)

    def __len__(self):
        self._open_file()
        return len(self._names)

    def items(self):
        self._open_file()
        return ((n, self[n]) for n in self._names)

    def close(self):
        self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _check_regular_file(path):
    """FileError unless ``path`` is a regular file. Opened non-blocking, so
    a FIFO without a writer is refused instead of waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise FileError(f"{path} is a directory") from None
    except OSError as e:
        raise FileError(f"cannot read {path}: {e}") from e
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if stat.S_ISDIR(mode):
        raise FileError(f"{path} is a directory")
    if not stat.S_ISREG(mode):
        raise FileError(f"{path} is not a regular file (a FIFO, socket or "
                        "device): .hrry files are read by random access; "
                        "stream a FIFO with hurray.StreamReader")


def open(path, permissive=False):  # noqa: A001 (mirrors io.open)
    """Opens a .hrry file for random access (see HrryFile for what it
    promises when another writer changes the file)."""
    return HrryFile(path, permissive)


def load(path, names=None, permissive=False):
    """The tensors of a .hrry file as ``{name: Tensor}`` in file order, or
    only ``names``: a list of names, or one name as a str (KeyError for a
    name the file does not hold). Every tensor's buffers are read (copied)
    now, and the file is closed before returning."""
    if isinstance(names, (str, bytes)):
        names = [names]
    with HrryFile(path, permissive) as f:
        wanted = f.names if names is None else list(names)
        return {n: f[n] for n in wanted}


# -- bare streams --------------------------------------------------------------

class StreamWriter:
    """Writes tensors as a bare stream (descriptor, then its buffers), one
    at a time, to a path, a file object, a socket, or (no argument) to
    memory (``getvalue()``). Each tensor is validated strictly before a byte
    of it is written.

    A path is written the one way this library creates files (a hidden
    temp beside it, O_EXCL | O_NOFOLLOW) and appears, complete, when the
    stream is finished; an exception inside the ``with`` block leaves
    nothing behind. ``finish()`` (or ``close()``, or the end of a ``with``
    block) ends the stream; it is idempotent, and writing after it raises
    StreamError. Finishing never closes a socket or file object given."""

    def __init__(self, sink=None, permissive=False):
        self._memory = None
        self._file = None
        if sink is None:
            self._memory = io.BytesIO()
            self._write = self._memory.write
        elif isinstance(sink, (str, os.PathLike)):
            self._file = _hurray.SafeOutputFile(os.fspath(sink))
            self._write = self._file.write
        elif hasattr(sink, "sendall"):
            self._write = sink.sendall
        elif hasattr(sink, "write"):
            self._write = sink.write
        else:
            raise TypeError("StreamWriter writes to a path, a file object, a "
                            "socket, or (no argument) to memory")
        self._encoder = _hurray.StreamEncoder(permissive)
        self._closed = False

    def write(self, tensor):
        if self._closed:
            raise StreamError("the stream is finished: nothing more can be "
                              "written", "STREAM-IO", None)
        if not isinstance(tensor, Tensor):
            raise TypeError(f"StreamWriter writes hurray.Tensor, not "
                            f"{type(tensor).__name__}")
        self._encoder.write(tensor._fields, tensor._buffers, self._write)

    def finish(self):
        """Ends the stream (a composite still waiting for members is an
        error) and, for a path, publishes the file. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._encoder.close()
            if self._file is not None:
                self._file.commit()
        finally:
            if self._file is not None:
                self._file.discard()

    close = finish

    def _abandon(self):
        self._closed = True
        if self._file is not None:
            self._file.discard()

    def getvalue(self):
        """The stream's bytes, for a writer to memory."""
        if self._memory is None:
            raise StreamError("getvalue() is for a writer to memory: this one "
                              "writes to the destination it was given",
                              "STREAM-IO", None)
        return self._memory.getvalue()

    tensors_written = property(lambda self: self._encoder.tensors_written)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.finish()
        else:
            self._abandon()
        return False


def _chunk_size(chunk_size):
    """A positive chunk size, or a negative one (read a file object whole,
    in one call); 0 would read nothing and end the stream at once."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise TypeError("chunk_size must be an int, not "
                        f"{type(chunk_size).__name__}")
    if chunk_size == 0:
        raise ValueError("chunk_size must not be 0 (it would read nothing): "
                         "a positive size, or negative to read a file "
                         "object whole")
    return chunk_size


def _checked_chunk(chunk, source):
    if chunk is None:
        raise StreamError(f"{type(source).__name__}.read() returned None "
                          "(a non-blocking source with no data ready)",
                          "STREAM-IO", None)
    if not isinstance(chunk, (bytes, bytearray, memoryview)):
        raise TypeError(f"{type(source).__name__}.read() returned "
                        f"{type(chunk).__name__}, not bytes")
    return chunk


def _readinto_reader(source, chunk_size):
    """Reads through ``readinto`` into one reused buffer (the decoder copies
    what it is fed), checking the count the source claims."""
    buf = bytearray(chunk_size)
    view = memoryview(buf)

    def read():
        n = source.readinto(buf)
        if n is None:
            raise StreamError(f"{type(source).__name__}.readinto() returned "
                              "None (a non-blocking source with no data "
                              "ready)", "STREAM-IO", None)
        if isinstance(n, bool) or not isinstance(n, int) \
                or not 0 <= n <= len(buf):
            raise StreamError(
                f"{type(source).__name__}.readinto() returned {n!r}: a "
                f"count from 0 to {len(buf)} was expected", "STREAM-IO", None)
        return view[:n]

    return read


def _reader_of(source, chunk_size, idle_timeout):
    """A function returning the next chunk of ``source`` (b"" at the end).
    A socket is waited on for at most ``idle_timeout`` seconds per chunk
    (None: no deadline), whatever its own timeout is."""
    chunk_size = _chunk_size(chunk_size)
    if isinstance(source, (bytes, bytearray, memoryview)):
        chunks = iter([memoryview(source)])
        return lambda: next(chunks, b"")
    if hasattr(source, "recv") and hasattr(source, "fileno"):
        import select
        if chunk_size < 0:
            raise ValueError("a socket is read in chunks: chunk_size must be "
                             "positive")

        def recv():
            if idle_timeout is not None:
                ready, _, _ = select.select([source], [], [], idle_timeout)
                if not ready:
                    raise StreamError(
                        f"no byte for {idle_timeout} s (idle timeout)",
                        "STREAM-IO", None)
            return source.recv(chunk_size)

        return recv
    if hasattr(source, "getbuffer") and hasattr(source, "getvalue"):
        raise TypeError("StreamReader reads bytes, a path, a socket or a file "
                        "with a descriptor; a BytesIO already holds its "
                        "bytes: pass buf.getvalue() (or buf.getbuffer(), no "
                        "copy)")
    if hasattr(source, "readinto") and chunk_size > 0:
        return _readinto_reader(source, chunk_size)
    if hasattr(source, "read"):
        return lambda: _checked_chunk(source.read(chunk_size), source)
    if hasattr(source, "recv") and chunk_size > 0:  # socket-like, no fd
        return lambda: _checked_chunk(source.recv(chunk_size), source)
    raise TypeError(f"StreamReader reads bytes, a path, a socket or an object "
                    f"with readinto(buffer), read(n) or recv(n); a "
                    f"{type(source).__name__} has none of them (wrap its "
                    "bytes with bytes(...) or give a file object)")


class StreamReader:
    """Iterates over the tensors of a bare stream as they arrive, from
    bytes, a path, a file object or a socket (an in-memory BytesIO is
    refused with advice: pass its bytes). A context manager: ``close()``
    stops reading, and a closed reader is exhausted (a path it opened is
    closed; a file object or socket given is not). Each tensor is yielded as soon as its
    last byte is in; memory grows with the bytes received, never with a
    declared size, and a buffer may declare at most ``max_buffer_bytes``.
    A stream cut inside a tensor raises StreamError; a malformed one
    InvalidDescriptorError, with the rule id and stream offset. A socket
    that sends nothing for ``idle_timeout`` seconds raises StreamError
    (STREAM-IO); None waits forever.

    ``chunk_size``: bytes asked of the source per read (default 1 MiB); 0
    is refused (ValueError). A negative size reads a file object whole in
    one ``read(-1)`` call (memory: the whole source); sockets need a
    positive size. A source whose ``readinto`` returns an impossible count,
    or whose ``read`` returns None, raises StreamError (STREAM-IO)."""

    def __init__(self, source, chunk_size=_CHUNK, permissive=False,
                 max_buffer_bytes=0, idle_timeout=60.0):
        self._owned = None
        if isinstance(source, (str, os.PathLike)):
            _chunk_size(chunk_size)
            self._owned = source = _open_input(os.fspath(source))
        try:
            self._read = _reader_of(source, chunk_size, idle_timeout)
        except BaseException:
            self.close()
            raise
        self._decoder = _hurray.StreamDecoder(permissive, max_buffer_bytes)
        self._ended = False

    def close(self):
        """Stops reading: the reader is exhausted from now on (a path it
        opened is closed; a socket or file object given stays open)."""
        self._ended = True
        self._decoder = None if not hasattr(self, "_decoder") else \
            _hurray.StreamDecoder()
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __iter__(self):
        return self

    def __next__(self):
        decoder = self._decoder
        while decoder.ready == 0:
            if self._ended:
                if self._owned is not None:
                    self.close()
                raise StopIteration
            chunk = self._read()
            if not chunk:
                self._ended = True
                decoder.finish()
                continue
            decoder.feed(chunk)
            decoder.raise_if_rejected()
        fields, buffers = decoder.pop()
        return Tensor._from_parts(fields, buffers)

    position = property(lambda self: self._decoder.position)


# -- descriptors ---------------------------------------------------------------

class Decoder(_hurray.Decoder):
    """The incremental descriptor decoder: ``feed(chunk)`` returns
    ``(state, consumed)`` with state NEED_MORE, DONE or REJECTED; it never
    consumes past the descriptor's end (the tensor's buffers start at
    ``chunk[consumed:]`` when DONE). ``finish()`` at the end of input turns a
    half-read descriptor into DESC-HDR-01; ``reset()`` starts the next one.
    """

    NEED_MORE, DONE, REJECTED = NEED_MORE, DONE, REJECTED

    @property
    def descriptor(self):
        """The decoded Descriptor once DONE, else None."""
        fields = self.fields
        return None if fields is None else Descriptor(fields)

    def raise_if_rejected(self):
        """Raises InvalidDescriptorError (rule, offset) when REJECTED."""
        if self.state == REJECTED:
            self.raise_rejection()


def decode_descriptor(data, permissive=False):
    """Decodes and validates the descriptor at the start of ``data``;
    returns ``(Descriptor, consumed)``."""
    fields, consumed = _hurray.decode_descriptor(data, permissive)
    return Descriptor(fields), consumed


# -- ingest --------------------------------------------------------------------

def ingest(source, dequantize=True, names=None, permissive=False,
           idle_timeout=60.0, connect_timeout=10.0, *, ca_file=None,
           headers=None, insecure=False, total_timeout=0.0,
           max_open_streams=None, max_spool_bytes=None, connections=1):
    """Yields ``(name, value)`` for every tensor of a source, validated as
    it arrives; the value is a float32 numpy array (``dequantize=True``;
    None for a tensor that has no values of its own, a composite's head or
    an extension type) or the Tensor. Every source goes through the
    library's one ingest call (``stream::Ingest()``, as ``hurray ingest``
    and the C ABI), with the GIL released while it runs:

    - a path: a .hrry file (its index first, then each tensor as it is
      read) or a bare stream file; ``"-"``: standard input;
    - bytes, a file object or a socket: read through its own methods
      (``readinto``, else ``read``; a socket's ``recv_into``, waited on for
      at most ``idle_timeout`` s) in chunks of 1 MiB;
    - ``tcp://HOST:PORT[/a,b,...]``: a ``hurray serve`` peer (the framed
      network protocol), every tensor it lists or the named ones, with the
      CLI's deadlines (connect, and idle: no byte for ``idle_timeout`` s).
    - ``https://HOST[:PORT]/PATH`` (and ``http://`` when the URL says so):
      a .hrry on a web server, read as ``hurray ingest`` reads it: the
      certificate and host name verified against the system store
      (``ca_file`` adds a trust anchor, ``insecure=True`` turns it off, with
      a warning), at most 5 redirects and never from https to http,
      ``headers`` ({"Name": "value"} or ["Name: value", ...];
      Authorization, Cookie and Proxy-Authorization are dropped when a
      redirect leaves the origin: scheme, host or port), the
      connect and idle deadlines and ``total_timeout`` (0: none). A server
      that serves byte ranges is read index first, then the tensors (only
      the named ones with ``names``); one without, and a bare stream, in
      one forward pass (a .hrry's tensors then come after its index, at its
      end). The ranges share one kept-alive connection; ``connections=N``
      (1 to 32, like ``hurray ingest --connections N``) fetches each range
      of 2 MiB or more, and a forward pass, over N connections at once, in
      order, through a window of at most 2 x N x 1 MiB; every range is
      validated (If-Range with the first answer's ETag or Last-Modified: an
      object that changes is an error, never mixed bytes).

    Memory: the tensor being yielded, the reader's ring and, for tcp://, the
    answers received ahead: a tcp:// peer that multiplexes its answers makes
    the client hold at most ``max_open_streams`` answers in progress
    (default 16, 1 to 1024; LIMIT-OPEN-STREAMS) and ``max_spool_bytes``
    bytes of later answers (default 64 MiB, 1 to 16 GiB; LIMIT-SPOOL-BYTES),
    like ``hurray ingest --max-open-streams/--max-spool-bytes``. Bare
    streams have no names: ``tensor_<i>``. ``names`` selects tensors (a
    .hrry file or URL, in file order; a tcp:// peer, in the order given).
    Ctrl-C while waiting for a tensor stops the run (KeyboardInterrupt);
    an exception raised by the source's methods is raised once, as is.
    """
    for key, value in (("max_open_streams", max_open_streams),
                       ("max_spool_bytes", max_spool_bytes),
                       ("connections", connections)):
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, int)):
            raise TypeError(f"{key} must be an int, not "
                            f"{type(value).__name__}")
    if insecure:
        import warnings
        warnings.warn("insecure=True: the server's certificate and host name "
                      "are NOT verified", stacklevel=2)
    reader, label = None, ""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        source = _MemoryReader(source)
    if not isinstance(source, str):
        reader, label = _reader_method(source), type(source).__name__
    session = _hurray.LibIngest(
        source, reader=reader, label=label,
        names=list(names) if names is not None else None,
        dequantize=dequantize, permissive=permissive,
        idle_timeout=idle_timeout, connect_timeout=connect_timeout,
        total_timeout=total_timeout,
        ca_file=os.fspath(ca_file) if ca_file is not None else "",
        headers=_header_lines(headers), insecure=insecure,
        max_open_streams=max_open_streams, max_spooled_bytes=max_spool_bytes,
        connections=connections)
    while True:
        item = session.next()
        if item is None:
            return
        if dequantize:
            yield item
        else:
            name, fields, buffers = item
            yield name, Tensor._from_parts(fields, buffers)


class _MemoryReader:
    """Bytes in memory, read by ``readinto`` (no copy of the whole)."""

    def __init__(self, data):
        self._view = memoryview(data).cast("B")
        self._at = 0

    def readinto(self, buf):
        n = min(len(buf), len(self._view) - self._at)
        buf[:n] = self._view[self._at:self._at + n]
        self._at += n
        return n


def _reader_method(source):
    """How the library pulls bytes from a Python object."""
    if hasattr(source, "recv_into") and hasattr(source, "fileno"):
        return "recv"
    if isinstance(source, io.FileIO):  # unbuffered: waited on, cancellable
        return "readinto_fd"
    if hasattr(source, "readinto"):
        return "readinto"
    if hasattr(source, "read"):
        return "read"
    raise TypeError(f"hurray.ingest reads a path, a URL, bytes, a file object "
                    f"or a socket, not {type(source).__name__} (an object "
                    "needs readinto() or read())")


def _header_lines(headers):
    if headers is None:
        return []
    if isinstance(headers, dict):
        return [f"{k}: {v}" for k, v in headers.items()]
    out = []
    for h in headers:
        out.append(h if isinstance(h, str) else f"{h[0]}: {h[1]}")
    return out


def _open_input(path):
    try:
        return io.open(path, "rb")
    except OSError as e:
        raise FileError(f"cannot read {path}: {e}") from e
