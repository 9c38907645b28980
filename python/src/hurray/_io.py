"""Reading and writing: .hrry files, bare tensor streams, the incremental
descriptor decoder, and ingest."""

import io
import os

from . import _hurray
from ._errors import FileError, StreamError
from ._tensor import Descriptor, Tensor

__all__ = ["save", "load", "open", "HrryFile", "StreamWriter",
           "StreamReader", "Decoder", "decode_descriptor", "ingest",
           "NEED_MORE", "DONE", "REJECTED"]

NEED_MORE, DONE, REJECTED = 0, 1, 2
_FILE_MAGIC = b"HRRYFILE"
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
    """A .hrry file opened over mmap, checked whole when opened. Tensors
    are looked up by name; their buffers are read-only views into the map
    (the map stays open while any of them lives)."""

    def __init__(self, path, permissive=False):
        path = os.fspath(path)
        if os.path.isdir(path):
            raise FileError(f"{path} is a directory")
        self._file = _hurray.HrryFile.open(path, permissive)
        self._names = self._file.names()

    @property
    def names(self):
        return list(self._names)

    @property
    def kv(self):
        return self._file.kv()

    def __getitem__(self, name):
        fields, buffers = self._file.tensor(name)
        return Tensor._from_parts(fields, buffers)

    def __contains__(self, name):
        return name in set(self._names)

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def items(self):
        return ((n, self[n]) for n in self._names)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._file = None
        return False


def open(path, permissive=False):  # noqa: A001 (mirrors io.open)
    """Opens a .hrry file for random access (see HrryFile)."""
    return HrryFile(path, permissive)


def load(path, names=None, permissive=False):
    """The tensors of a .hrry file as ``{name: Tensor}`` in file order, or
    only ``names`` (KeyError for a name the file does not hold)."""
    f = HrryFile(path, permissive)
    wanted = f.names if names is None else list(names)
    return {n: f[n] for n in wanted}


# -- bare streams --------------------------------------------------------------

class StreamWriter:
    """Writes tensors as a bare stream (descriptor, then its buffers), one
    at a time, to a file object, a socket, or (no argument) to memory
    (``getvalue()``). Each tensor is validated strictly before a byte of it
    is written. Closing the writer never closes the socket or file."""

    def __init__(self, sink=None, permissive=False):
        self._memory = None
        if sink is None:
            self._memory = io.BytesIO()
            self._write = self._memory.write
        elif hasattr(sink, "sendall"):
            self._write = sink.sendall
        elif hasattr(sink, "write"):
            self._write = sink.write
        else:
            raise TypeError("StreamWriter needs a file object or a socket")
        self._encoder = _hurray.StreamEncoder(permissive)
        self._closed = False

    def write(self, tensor):
        if self._closed:
            raise ValueError("the stream is closed")
        self._encoder.write(tensor._fields, tensor._buffers, self._write)

    def close(self):
        """Ends the stream (a composite still waiting for members is an
        error)."""
        if not self._closed:
            self._closed = True
            self._encoder.close()

    def getvalue(self):
        if self._memory is None:
            raise ValueError("getvalue() is for a writer to memory")
        return self._memory.getvalue()

    tensors_written = property(lambda self: self._encoder.tensors_written)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.close()
        else:
            self._closed = True
        return False


def _reader_of(source, chunk_size, idle_timeout):
    """A function returning the next chunk of ``source`` (b"" at the end).
    A socket is waited on for at most ``idle_timeout`` seconds per chunk
    (None: no deadline), whatever its own timeout is."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        chunks = iter([memoryview(source)])
        return lambda: next(chunks, b"")
    if hasattr(source, "recv"):
        import select

        def recv():
            if idle_timeout is not None:
                ready, _, _ = select.select([source], [], [], idle_timeout)
                if not ready:
                    raise StreamError(
                        f"no byte for {idle_timeout} s (idle timeout)",
                        "STREAM-IO", None)
            return source.recv(chunk_size)

        return recv
    if hasattr(source, "read"):
        return lambda: source.read(chunk_size)
    raise TypeError("StreamReader reads bytes, a file object or a socket")


class StreamReader:
    """Iterates over the tensors of a bare stream as they arrive, from
    bytes, a file object or a socket. Each tensor is yielded as soon as its
    last byte is in; memory grows with the bytes received, never with a
    declared size, and a buffer may declare at most ``max_buffer_bytes``.
    A stream cut inside a tensor raises StreamError; a malformed one
    InvalidDescriptorError, with the rule id and stream offset. A socket
    that sends nothing for ``idle_timeout`` seconds raises StreamError
    (STREAM-IO); None waits forever."""

    def __init__(self, source, chunk_size=_CHUNK, permissive=False,
                 max_buffer_bytes=0, idle_timeout=60.0):
        self._read = _reader_of(source, chunk_size, idle_timeout)
        self._decoder = _hurray.StreamDecoder(permissive, max_buffer_bytes)
        self._ended = False

    def __iter__(self):
        return self

    def __next__(self):
        decoder = self._decoder
        while decoder.ready == 0:
            if self._ended:
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
           max_open_streams=None, max_spool_bytes=None):
    """Yields ``(name, value)`` for every tensor of a source, validated as
    it arrives; the value is a float32 numpy array (``dequantize=True``) or
    the Tensor. Sources:

    - a path: a .hrry file (read over mmap) or a bare stream file;
    - a file object or a socket carrying a bare stream;
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
      connect and idle deadlines and ``total_timeout`` (0: none). The
      server must serve byte ranges: the index is read first, then the
      tensors (only the named ones with ``names``). A bare stream is read
      in one pass, with or without ranges.

    Memory: the tensor being yielded and, for tcp://, at most 64 MiB of
    tensors received ahead. A tcp:// peer that multiplexes its answers
    makes the client hold at most ``max_open_streams`` answers in progress
    (default 16, 1 to 1024; LIMIT-OPEN-STREAMS) and ``max_spool_bytes``
    bytes of later answers (default 64 MiB, 1 to 16 GiB; LIMIT-SPOOL-BYTES),
    like ``hurray ingest --max-open-streams/--max-spool-bytes``. Bare streams have no names: ``tensor_<i>``.
    ``names`` selects tensors (a .hrry file, or a tcp:// peer).
    """
    if isinstance(source, str) and source[:8].lower().startswith(
            ("http://", "https://")):
        if max_open_streams is not None or max_spool_bytes is not None:
            raise ValueError("max_open_streams and max_spool_bytes are for "
                             "tcp:// sources")
        yield from _ingest_http(source, dequantize, names, permissive,
                                idle_timeout, connect_timeout, ca_file,
                                headers, insecure, total_timeout)
        return
    if ca_file is not None or headers or insecure or total_timeout:
        raise ValueError("ca_file, headers, insecure and total_timeout are "
                         "for http:// and https:// sources")
    if isinstance(source, str) and "://" in source:
        limits = _net_limits(max_open_streams, max_spool_bytes)
        yield from _ingest_tcp(source, dequantize, names, permissive,
                               idle_timeout, connect_timeout, limits)
        return
    if max_open_streams is not None or max_spool_bytes is not None:
        raise ValueError("max_open_streams and max_spool_bytes are for "
                         "tcp:// sources")
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with _open_input(path) as f:
            magic = f.read(len(_FILE_MAGIC))
        if magic == _FILE_MAGIC:
            yield from _ingest_file(path, dequantize, names, permissive)
            return
        with _open_input(path) as f:
            yield from _ingest_stream(f, dequantize, permissive)
        return
    yield from _ingest_stream(source, dequantize, permissive)


def _parse_tcp(url):
    if not url.startswith("tcp://"):
        raise ValueError(f"unsupported source {url!r}: paths, file objects, "
                         "sockets and tcp://HOST:PORT")
    rest = url[len("tcp://"):]
    hostport, _, keys = rest.partition("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port:
        raise ValueError("tcp:// needs HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port, [k for k in keys.split(",") if k]


_MAX_OPEN_STREAMS = 1024        # as the CLI's --max-open-streams
_MAX_SPOOL_BYTES = 16 << 30     # as the CLI's --max-spool-bytes


def _limit(name, value, high):
    if value is None:
        return 0  # the session's default
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 1 <= value <= high:
        raise ValueError(f"{name} must be from 1 to {high}, got {value}")
    return value


def _net_limits(max_open_streams, max_spool_bytes):
    return (_limit("max_open_streams", max_open_streams, _MAX_OPEN_STREAMS),
            _limit("max_spool_bytes", max_spool_bytes, _MAX_SPOOL_BYTES))


def _net_tensors(host, port, keys, permissive, idle, connect, limits):
    session = _hurray.NetIngest(host, port, keys, permissive, idle, connect,
                                max_open_streams=limits[0],
                                max_spooled_bytes=limits[1])
    while True:
        item = session.next()
        if item is None:
            return
        key, fields, buffers = item
        yield key, Tensor._from_parts(fields, buffers)


def _ingest_tcp(url, dequantize, names, permissive, idle, connect, limits):
    host, port, keys = _parse_tcp(url)
    keys = list(names) if names is not None else keys
    if not keys:  # every tensor the server lists (docs/network.md)
        (_, listing), = _net_tensors(host, port, [_hurray.LIST_KEY],
                                     permissive, idle, connect, limits)
        keys = _hurray.parse_tensor_list(listing.data)
    if not keys:
        return
    for key, t in _net_tensors(host, port, keys, permissive, idle, connect,
                               limits):
        yield key, (t.dequantize() if dequantize else t)


def _header_lines(headers):
    if headers is None:
        return []
    if isinstance(headers, dict):
        return [f"{k}: {v}" for k, v in headers.items()]
    out = []
    for h in headers:
        out.append(h if isinstance(h, str) else f"{h[0]}: {h[1]}")
    return out


def _ingest_http(url, dequantize, names, permissive, idle, connect, ca_file,
                 headers, insecure, total):
    if insecure:
        import warnings
        warnings.warn("insecure=True: the server's certificate and host name "
                      "are NOT verified", stacklevel=3)
    session = _hurray.HttpIngest(
        url, list(names) if names is not None else [], permissive,
        os.fspath(ca_file) if ca_file is not None else "",
        _header_lines(headers), insecure, connect, idle, total)
    i = 0
    while True:
        item = session.next()
        if item is None:
            return
        key, fields, buffers = item
        t = Tensor._from_parts(fields, buffers)
        yield (key or f"tensor_{i}"), (t.dequantize() if dequantize else t)
        i += 1


def _open_input(path):
    try:
        return io.open(path, "rb")
    except OSError as e:
        raise FileError(f"cannot read {path}: {e}") from e


def _ingest_file(path, dequantize, names, permissive):
    f = HrryFile(path, permissive)
    for name in (f.names if names is None else names):
        t = f[name]
        yield name, (t.dequantize() if dequantize else t)


def _ingest_stream(source, dequantize, permissive):
    for i, t in enumerate(StreamReader(source, permissive=permissive)):
        yield f"tensor_{i}", (t.dequantize() if dequantize else t)
