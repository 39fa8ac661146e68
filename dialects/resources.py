"""``dense_resource`` blobs in MLIR's textual encoding, stored in the builtin dialect.

MLIR prints large constants as ``dense_resource<key> : tensor<...>`` and keeps their bytes in the
file's trailing section::

    {-#
      dialect_resources: {
        builtin: {
          key: "0x04000000<little-endian element data as hex>"
        }
      }
    #-}

The blob string is ``"0x"`` + the blob's alignment as a 4-byte little-endian integer
(e.g. ``04000000`` for f32, ``08000000`` for f64/i64) + the raw little-endian element bytes, in
row-major (C) order — the encoding of MLIR's ``AsmResourceBlob`` printer.

xDSL stores the blobs in the builtin dialect's ``OpAsmDialectInterface`` (a process-wide
``key -> hex string`` table), prints the referenced ones after the module and parses them back.
This module encodes/decodes numpy arrays to/from that format and declares/looks up blobs.

Importing it also installs three fixes for xDSL 0.74 parsing of files with blobs (below).

xDSL 0.74 workaround (see ``_install_parser_fix``): its parser renames a resource handle whose
key is already in the process-wide table (e.g. the same file parsed twice in one process) but
forgets the renaming for later references and for the ``dialect_resources`` entry, so the
attributes end up pointing at empty blobs. Importing this module installs a parser method that
remembers the renaming per parser.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    Builtin,
    DenseResourceAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    ContainerType,
    IntegerType,
    ShapedType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute
from xdsl.parser.attribute_parser import AttrParser
from xdsl.utils.mlir_lexer import MLIRLexer

__all__ = [
    "decode_blob",
    "blob_nbytes",
    "blob_storage",
    "declare_blob",
    "element_dtype",
    "encode_blob",
    "LazyBlobStorage",
    "lookup_blob",
    "release_blobs",
    "resource_interface",
    "resource_value",
]


class LazyBlobStorage(dict):
    """``key -> blob`` table whose entries may be numpy arrays, hex-encoded only when read.

    Installed as the builtin ``OpAsmDialectInterface``'s ``_blob_storage``: blobs declared by
    :func:`declare_blob` stay numpy arrays (no hex cost for import + interpretation); xDSL's printer
    reads them through ``__getitem__``/``get``, which return the MLIR hex string. Parsed blobs are
    stored as the hex strings xDSL hands over.
    """

    def __getitem__(self, key: str) -> str:
        value = dict.__getitem__(self, key)
        return encode_blob(value) if isinstance(value, np.ndarray) else value

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        if not dict.__contains__(self, key):
            return default
        return self[key]

    def raw(self, key: str) -> str | np.ndarray | None:
        """The stored object (hex string or numpy array), or None."""
        return dict.get(self, key)

    def values(self):
        return [self[k] for k in self]

    def items(self):
        return [(k, self[k]) for k in self]


def resource_interface() -> OpAsmDialectInterface:
    """The builtin dialect's resource table (shared by xDSL's parser and printer)."""
    interface = Builtin.get_interface(OpAsmDialectInterface)
    assert interface is not None, "xDSL's builtin dialect has no OpAsmDialectInterface"
    if not isinstance(interface._blob_storage, LazyBlobStorage):
        interface._blob_storage = LazyBlobStorage(interface._blob_storage)
    return interface


def blob_storage() -> LazyBlobStorage:
    """The process-wide ``key -> blob`` table itself (installed by :func:`resource_interface`:
    the one place that touches xDSL's private ``_blob_storage``). xDSL has no public way to
    remove a blob; :func:`release_blobs` is ours."""
    storage = resource_interface()._blob_storage
    assert isinstance(storage, LazyBlobStorage)
    return storage


def release_blobs(keys: Iterable[str]) -> None:
    """Drop the blobs under ``keys`` (unknown keys are ignored): a long-running process that
    builds many modules (a tuner's candidates, a test suite's networks) frees their constants.
    Attributes still referring to them have no bytes afterwards."""
    storage = blob_storage()
    for key in list(keys):
        storage.pop(key, None)


def element_dtype(element_type: Attribute) -> np.dtype:
    """Little-endian numpy dtype of a builtin element type (f16/f32/f64, i1..i64, ui*).

    Raises ``ValueError`` for element types without a numpy equivalent (bf16, index, complex).
    """
    if isinstance(element_type, Float16Type):
        return np.dtype("<f2")
    if isinstance(element_type, Float32Type):
        return np.dtype("<f4")
    if isinstance(element_type, Float64Type):
        return np.dtype("<f8")
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if width not in (8, 16, 32, 64):
            raise ValueError(f"no numpy dtype for integer width {width}")
        unsigned = element_type.signedness.data == Signedness.UNSIGNED
        return np.dtype(f"<{'u' if unsigned else 'i'}{width // 8}")
    raise ValueError(f"no numpy dtype for element type {element_type}")


def encode_blob(array: np.ndarray) -> str:
    """MLIR blob string of ``array``: ``"0x"`` + alignment (4-byte LE) + raw LE data, in hex.

    Lower-case hex digits (MLIR prints upper case; both parse).

    The alignment is the element size in bytes (1 for bool/i8). Data is row-major.
    """
    array = np.asarray(array)
    le = array.astype(array.dtype.newbyteorder("<"), copy=False)
    data = np.ascontiguousarray(le).data
    alignment = max(1, array.dtype.itemsize).to_bytes(4, "little")
    return "0x" + alignment.hex() + data.hex()


def decode_blob(blob: str, dtype: np.dtype | str, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`encode_blob`: a read-only array of ``dtype`` and ``shape``.

    Raises ``ValueError`` if the string is not ``0x``-prefixed hex or its payload size does not
    match ``prod(shape) * itemsize``.
    """
    if not blob.startswith("0x"):
        raise ValueError("resource blob must start with '0x'")
    raw = bytes.fromhex(blob[2:])
    if len(raw) < 4:
        raise ValueError("resource blob is shorter than its 4-byte alignment header")
    dtype = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).itemsize > 1 else np.dtype(dtype)
    payload = memoryview(raw)[4:]
    count = int(np.prod(shape, dtype=np.int64))
    if len(payload) != count * dtype.itemsize:
        raise ValueError(
            f"resource blob holds {len(payload)} bytes but shape {tuple(shape)} of {dtype} "
            f"needs {count * dtype.itemsize}"
        )
    array = np.frombuffer(payload, dtype=dtype).reshape(shape)
    return array.astype(array.dtype.newbyteorder("="), copy=False)


def _immutable(array: np.ndarray) -> bool:
    """True if nothing can write ``array``'s memory: it and every array it is a view of are
    read-only and the memory is a ``bytes`` object (``np.frombuffer`` of an ONNX tensor's
    ``raw_data``)."""
    base: object = array
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return False
        base = base.base
    return isinstance(base, bytes)


def declare_blob(name_hint: str, array: np.ndarray) -> str:
    """Store ``array`` in the builtin resource table under a fresh key derived from ``name_hint``.

    Returns the key actually used (``name_hint``, or ``name_hint_<n>`` if taken).
    """
    interface = resource_interface()
    key = interface.declare_resource(_sanitize_key(name_hint))
    if array.flags.c_contiguous and _immutable(array):
        value = array  # (an imported weight: a view of the model's bytes, no copy needed)
    else:
        value = np.array(array, copy=True, order="C")
        value.flags.writeable = False
    blob_storage()[key] = value  # LazyBlobStorage: hex-encoded when printed
    return key


def lookup_blob(key: str) -> str:
    """Blob string stored under ``key``; ``KeyError`` if the key is unknown or has no data."""
    blob = resource_interface().lookup(key)
    if not blob:
        raise KeyError(f"dense_resource<{key}> has no blob in the builtin dialect_resources")
    return blob


def blob_nbytes(key: str) -> int | None:
    """Payload size in bytes of the blob under ``key`` (without decoding), None if missing/empty."""
    stored = blob_storage().raw(key)
    if isinstance(stored, np.ndarray):
        return stored.nbytes
    if not stored:
        return None
    return max(0, (len(stored) - 2) // 2 - 4)


_decoded_cache: dict[str, tuple[str, np.ndarray]] = {}


def resource_value(attr: DenseResourceAttr) -> np.ndarray:
    """Read-only numpy array held by a ``dense_resource`` attribute (dtype/shape from its type).

    Decoded arrays are cached per key (invalidated when the key's blob string changes).
    Raises ``KeyError`` if the blob is missing and ``ValueError`` if its size mismatches the type.
    """
    key = attr.resource_handle.data
    stored = blob_storage().raw(key)
    ty = attr.type
    assert isinstance(ty, ShapedType) and isinstance(ty, ContainerType)  # (xDSL's shaped types all are)
    shape = tuple(ty.get_shape())
    element_type = ty.element_type if isinstance(ty, TensorType) else ty.get_element_type()
    dtype = element_dtype(element_type)
    if isinstance(stored, np.ndarray):
        if stored.dtype != dtype or stored.shape != shape:
            if stored.size * stored.dtype.itemsize != int(np.prod(shape)) * dtype.itemsize:
                raise ValueError(
                    f"dense_resource<{key}> holds {stored.nbytes} bytes but type {ty} needs "
                    f"{int(np.prod(shape)) * dtype.itemsize}"
                )
            stored = stored.view(dtype).reshape(shape)
            stored.flags.writeable = False
        return stored
    if not stored:
        raise KeyError(f"dense_resource<{key}> has no blob in the builtin dialect_resources")
    blob = stored
    hit = _decoded_cache.get(key)
    if hit is not None and hit[0] is blob and hit[1].shape == shape:
        return hit[1]
    value = decode_blob(blob, dtype, shape)
    value.flags.writeable = False
    _decoded_cache[key] = (blob, value)
    return value


def _sanitize_key(name: str) -> str:
    """A valid bare-identifier resource key: ``[A-Za-z_][A-Za-z0-9_$.]*``."""
    out = "".join(c if (c.isascii() and (c.isalnum() or c in "_.$")) else "_" for c in name)
    if not out or not (out[0].isalpha() or out[0] == "_"):
        out = "_" + out
    return out


def _install_parser_fix() -> None:
    """Make xDSL 0.74's resource-handle parsing rename keys consistently within one parse."""
    if getattr(AttrParser, "_taihu_resource_fix", False):
        return

    def _parse_dialect_resource_handle(
        self: AttrParser, dialect_name: str, interface: OpAsmDialectInterface
    ) -> str:
        key = self.parse_identifier(" for resource handle")
        renames: dict[tuple[str, str], str] | None = self.__dict__.get("_taihu_resource_renames")
        if renames is None:
            renames = {}
            self.__dict__["_taihu_resource_renames"] = renames
        if (dialect_name, key) in renames:
            return renames[(dialect_name, key)]
        if (dialect_name, key) in self.dialect_resources:  # declared before the fix loaded
            return key
        declared = interface.declare_resource(key)
        renames[(dialect_name, key)] = declared
        self.dialect_resources.add((dialect_name, declared))
        return declared

    AttrParser._parse_dialect_resource_handle = _parse_dialect_resource_handle  # type: ignore[method-assign]
    AttrParser._taihu_resource_fix = True  # type: ignore[attr-defined]


def _install_lexer_fix() -> None:
    """Make xDSL 0.74's string-literal regex linear on unterminated strings.

    Its pattern ``"(?:[^"\\...]+|\\(...))*"`` nests ``+`` inside ``*``, so on a string without a
    closing quote (e.g. a truncated file whose last line is a long hex blob) ``re`` backtracks
    exponentially and the tools hang instead of reporting "End of file reached before closing
    string literal". Possessive quantifiers (Python >= 3.11) give the same language, linearly.
    """
    try:
        pattern = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')
    except re.error:  # Python 3.10: no possessive quantifiers; single-character steps
        pattern = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')
    MLIRLexer._unescaped_characters_regex = pattern


def _install_dense_type_fix() -> None:
    """Build xDSL 0.74's dense-literal type constraint once instead of per ``dense<...>`` literal.

    ``AttrParser._parse_dense_literal_type`` calls ``base(RankedStructure[...])`` for every
    literal (~3 ms each: ResNet-50's import spends > 1 s there). Same checks, same messages.
    """
    from xdsl.dialects.builtin import DYNAMIC_INDEX, AnyFloat, ComplexType, IndexType, RankedStructure
    from xdsl.irdl import base

    # (the expression xDSL's parser uses; mypy cannot subscript the RankedStructure union alias)
    constraint = base(RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType])  # type: ignore[misc]

    def _parse_dense_literal_type(self: AttrParser):
        type = self.expect(self.parse_optional_type, "Dense attribute must be typed!")
        if not constraint.verifies(type):
            self.raise_error(
                "Expected memref, vector or tensor type of integer, index, float, or complex type"
            )
        if any(dim == DYNAMIC_INDEX for dim in list(type.get_shape())):
            self.raise_error("Dense literal attribute should have a static shape.")
        return type

    AttrParser._parse_dense_literal_type = _parse_dense_literal_type  # type: ignore[method-assign]


_install_parser_fix()
_install_lexer_fix()
_install_dense_type_fix()
resource_interface()  # install LazyBlobStorage
