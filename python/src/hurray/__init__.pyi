# Type stubs of the hurray package (python/src/hurray/), for editors and
# type checkers. The behaviour is documented in the docstrings.
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping,
                    Optional, Sequence, Tuple, Union)

import numpy

__version__: str
NEED_MORE: int
DONE: int
REJECTED: int
NF4_LUT: Tuple[float, ...]
MXFP_CANONICAL_BLOCK_SIZE: int

Buffer = Union[bytes, bytearray, memoryview, numpy.ndarray]

class HurrayError(Exception): ...
class InvalidDescriptorError(HurrayError, ValueError):
    rule: Optional[str]
    offset: Optional[int]
    def __init__(self, message: str, rule: Optional[str] = ..., offset: Optional[int] = ...) -> None: ...
class StreamError(InvalidDescriptorError): ...
class BufferError(InvalidDescriptorError): ...
class FileError(HurrayError, OSError):
    rule: Optional[str]
    offset: Optional[int]

class dtype:
    name: str
    tag: int
    bit_width: int
    is_float: bool
    is_signed: bool
    tier: int
    @classmethod
    def from_tag(cls, tag: int) -> dtype: ...
    @classmethod
    def from_name(cls, name: str) -> dtype: ...
    @property
    def numpy(self) -> Optional[numpy.dtype]: ...
    float16: dtype; bfloat16: dtype; float32: dtype; float64: dtype
    int8: dtype; uint8: dtype; int16: dtype; uint16: dtype; int32: dtype
    uint32: dtype; int64: dtype; uint64: dtype; bool: dtype
    float8_e4m3: dtype; float8_e5m2: dtype; float8_e8m0: dtype
    float4_e2m1: dtype; float6_e2m3: dtype; float6_e3m2: dtype
    float128: dtype; int4: dtype; uint4: dtype; int2: dtype; uint2: dtype
    complex64: dtype; complex128: dtype

float16: dtype; bfloat16: dtype; float32: dtype; float64: dtype
int8: dtype; uint8: dtype; int16: dtype; uint16: dtype; int32: dtype
uint32: dtype; int64: dtype; uint64: dtype
float8_e4m3: dtype; float8_e5m2: dtype; float8_e8m0: dtype
float4_e2m1: dtype; float6_e2m3: dtype; float6_e3m2: dtype
float128: dtype; int4: dtype; uint4: dtype; int2: dtype; uint2: dtype
complex64: dtype; complex128: dtype

class Device:
    kind: str
    index: int
    def __init__(self, kind: str = ..., index: int = ...) -> None: ...
class device:
    cpu: Device

class _Scheme:
    def encode(self) -> bytes: ...
class PerTensorAffine(_Scheme):
    scale: float
    zero_point: int
    symmetric: bool
    def __init__(self, scale: float, zero_point: int = ...) -> None: ...
class PerChannelAffine(_Scheme):
    axis: int
    scale_buffer_index: int
    zero_point_buffer_index: Optional[int]
    scale_type: dtype
    symmetric: Any  # a factory on the class, a bool on instances
    def __init__(self, axis: int, scale_buffer_index: int, zero_point_buffer_index: Optional[int] = ...) -> None: ...
    @classmethod
    def asymmetric(cls, axis: int, scale_buffer_index: int, zero_point_buffer_index: int) -> PerChannelAffine: ...
class PerBlockAffine(_Scheme):
    axis: int
    block_size: int
    scale_buffer_index: int
    zero_point_buffer_index: Optional[int]
    scale_type: dtype
    symmetric: Any  # a factory on the class, a bool on instances
    def __init__(self, axis: int, block_size: int, scale_buffer_index: int, zero_point_buffer_index: Optional[int] = ..., scale_type: dtype = ...) -> None: ...
    @classmethod
    def asymmetric(cls, axis: int, block_size: int, scale_buffer_index: int, zero_point_buffer_index: int, scale_type: dtype = ...) -> PerBlockAffine: ...
class NF4(_Scheme):
    LUT: Tuple[float, ...]
    axis: int
    block_size: int
    scale_buffer_index: int
    def __init__(self, axis: int, block_size: int, scale_buffer_index: int) -> None: ...
class MXFP(_Scheme):
    CANONICAL_BLOCK_SIZE: int
    axis: int
    block_size: int
    scale_buffer_index: int
    def __init__(self, axis: int, block_size: int = ..., scale_buffer_index: int = ...) -> None: ...
Scheme = Union[PerTensorAffine, PerChannelAffine, PerBlockAffine, NF4, MXFP]
def decode_quantization(data: Buffer) -> Scheme: ...

class Layout:
    TAG: int
    NAME: str
class RowMajorLayout(Layout): ...
class ColumnMajorLayout(Layout): ...
class StridedLayout(Layout):
    strides: Tuple[int, ...]
    def __init__(self, strides: Sequence[int]) -> None: ...
class MortonLayout(Layout):
    def __init__(self, morton_bits: Sequence[int]) -> None: ...
class HilbertLayout(Layout):
    def __init__(self, hilbert_order: int) -> None: ...
class CooLayout(Layout):
    nnz: int
    def __init__(self, nnz: int, is_sorted: bool = ...) -> None: ...
class CsrLayout(Layout):
    nnz: int
    def __init__(self, nnz: int) -> None: ...
class CscLayout(CsrLayout): ...
class CsfLayout(Layout):
    def __init__(self, nnz: int, mode_order: Sequence[int]) -> None: ...

class Statistics:
    computed_mask: int
    nnz: Optional[int]
    sparsity_ratio: Optional[float]
    value_min: Optional[float]
    value_max: Optional[float]
    value_abs_max: Optional[float]
    value_mean: Optional[float]
    value_stddev: Optional[float]
    nm_n: Optional[int]
    nm_m: Optional[int]
    has_nan: Optional[bool]
    has_inf: Optional[bool]
    def __init__(self, **values: Any) -> None: ...
class Shard:
    parent_shape: Tuple[int, ...]
    shard_offset: Tuple[int, ...]
    def __init__(self, parent_shape: Sequence[int], shard_offset: Sequence[int]) -> None: ...

class Descriptor:
    shape: Tuple[int, ...]
    ndim: int
    size: int
    dtype: dtype
    device: Device
    layout: Layout
    nnz: Optional[int]
    byte_offset: int
    buffer_count: int
    buffer_sizes: Tuple[int, ...]
    quantization: Optional[Scheme]
    statistics: Optional[Statistics]
    shard: Optional[Shard]
    def encode(self) -> bytes: ...

class Tensor(Descriptor):
    buffers: Tuple[Buffer, ...]
    data: Buffer
    def __init__(self, data: Buffer, dtype: Union[dtype, str], shape: Sequence[int], device: Optional[Device] = ..., *, aux_buffers: Sequence[Buffer] = ..., quantization: Optional[Scheme] = ..., layout: Optional[Layout] = ..., shard: Optional[Shard] = ..., statistics: Optional[Statistics] = ..., byte_offset: int = ...) -> None: ...
    def dequantize(self, dtype: Any = ..., threads: int = ..., out: Optional[numpy.ndarray] = ...) -> numpy.ndarray: ...
    def __array__(self, dtype: Any = ...) -> numpy.ndarray: ...
    def __dlpack__(self, stream: Any = ...) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...

def from_numpy(array: numpy.ndarray) -> Tensor: ...
def zeros(shape: Union[int, Sequence[int]], dtype: dtype = ...) -> Tensor: ...
def arange(n: int, dtype: dtype = ...) -> Tensor: ...
def quantize(array: Any, scheme: str = ..., dtype: Union[dtype, str, None] = ..., axis: Optional[int] = ..., block_size: Optional[int] = ..., symmetric: Optional[bool] = ..., scale_type: dtype = ...) -> Tensor: ...

def save(path: Any, tensors: Mapping[str, Tensor], kv: Optional[Mapping[str, Any]] = ...) -> None: ...
def load(path: Any, names: Optional[Iterable[str]] = ..., permissive: bool = ...) -> Dict[str, Tensor]: ...
class HrryFile:
    names: List[str]
    kv: Dict[str, Any]
    def __init__(self, path: Any, permissive: bool = ...) -> None: ...
    def __getitem__(self, name: str) -> Tensor: ...
    def __contains__(self, name: object) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def items(self) -> Iterator[Tuple[str, Tensor]]: ...
    def __enter__(self) -> HrryFile: ...
    def __exit__(self, *exc: Any) -> bool: ...
def open(path: Any, permissive: bool = ...) -> HrryFile: ...

class StreamWriter:
    tensors_written: int
    def __init__(self, sink: Any = ..., permissive: bool = ...) -> None: ...
    def write(self, tensor: Tensor) -> None: ...
    def close(self) -> None: ...
    def getvalue(self) -> bytes: ...
    def __enter__(self) -> StreamWriter: ...
    def __exit__(self, *exc: Any) -> bool: ...
class StreamReader(Iterator[Tensor]):
    position: int
    def __init__(self, source: Any, chunk_size: int = ..., permissive: bool = ..., max_buffer_bytes: int = ...) -> None: ...
    def __next__(self) -> Tensor: ...

class Decoder:
    NEED_MORE: int
    DONE: int
    REJECTED: int
    state: int
    consumed: int
    descriptor: Optional[Descriptor]
    rejection: Optional[Tuple[str, int, str]]
    def __init__(self, permissive: bool = ..., max_descriptor_bytes: int = ...) -> None: ...
    def feed(self, chunk: Buffer) -> Tuple[int, int]: ...
    def finish(self) -> int: ...
    def reset(self) -> None: ...
    def raise_if_rejected(self) -> None: ...
def decode_descriptor(data: Buffer, permissive: bool = ...) -> Tuple[Descriptor, int]: ...
def ingest(source: Any, dequantize: bool = ..., names: Optional[Iterable[str]] = ..., permissive: bool = ...) -> Iterator[Tuple[str, Any]]: ...
