"""The few ONNX protobuf messages a graph needs, written by hand.

onnxruntime runs a model given as bytes; building those bytes with the ``onnx`` package would add
~20 MB to an image kept under 600 MB, for a writer of a dozen fields. Field numbers are onnx.proto3's
(onnx 1.x, IR version 8).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import numpy as np

FLOAT, UINT8, INT8, INT32, INT64 = 1, 2, 3, 6, 7  # TensorProto.DataType
_ONNX_TYPE = {np.dtype(t): code for t, code in ((np.float32, FLOAT), (np.uint8, UINT8), (np.int8, INT8),
                                                 (np.int32, INT32), (np.int64, INT64))}
_ATTR_FLOAT, _ATTR_INT, _ATTR_STRING, _ATTR_INTS = 1, 2, 3, 7  # AttributeProto.AttributeType


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative ints are ten-byte two's complement, as protobuf writes them
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _key(field, 2) + _varint(len(data)) + data


def _field(field: int, chunks: list) -> list:
    """A length-delimited field around a message kept as chunks (bytes-like), not joined yet."""
    return [_key(field, 2) + _varint(sum(len(chunk) for chunk in chunks)), *chunks]


def tensor(name: str, array: np.ndarray) -> list:
    """TensorProto: dims, data_type, name, raw_data (little-endian), as chunks: the weights stay in
    their array until :func:`model` joins the whole model, so 64 MB are copied once, not four times."""
    data_type = _ONNX_TYPE[array.dtype]
    array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    head = b"".join(_int(1, d) for d in array.shape) + _int(2, data_type) + _bytes(8, name)
    return [head, *_field(9, [memoryview(array).cast("B")])]


def attr(name: str, value: int | float | str | list[int]) -> bytes:
    """AttributeProto of a scalar int/float, a string or a list of ints."""
    if isinstance(value, bool | int):
        return _bytes(1, name) + _int(3, int(value)) + _int(20, _ATTR_INT)
    if isinstance(value, float):
        return _bytes(1, name) + _key(2, 5) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, str):
        return _bytes(1, name) + _bytes(4, value) + _int(20, _ATTR_STRING)
    return _bytes(1, name) + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)


def node(op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs) -> bytes:
    """NodeProto; an empty input name stands for an omitted optional input."""
    out = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    out += _bytes(3, f"{op}:{outputs[0]}") + _bytes(4, op)
    out += b"".join(_bytes(5, attr(k, v)) for k, v in attrs.items())
    return out + (_bytes(7, domain) if domain else b"")


def value_info(name: str, elem_type: int, shape: Iterable[int | str]) -> bytes:
    """ValueInfoProto for a graph input or output; a str dimension is symbolic."""
    dims = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in shape)
    tensor_type = _int(1, elem_type) + _bytes(2, dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def model(
    nodes: list[bytes],
    initializers: list[list],
    inputs: list[bytes],
    outputs: list[bytes],
    opsets: dict[str, int],
) -> bytes:
    """ModelProto (IR version 8) around one graph; ``initializers`` are :func:`tensor`'s chunks."""
    graph: list = [b"".join(_bytes(1, n) for n in nodes) + _bytes(2, "graph")]
    for initializer in initializers:
        graph += _field(5, initializer)
    graph.append(b"".join(_bytes(11, i) for i in inputs) + b"".join(_bytes(12, o) for o in outputs))
    opset = b"".join(_bytes(8, (_bytes(1, d) if d else b"") + _int(2, v)) for d, v in opsets.items())
    return b"".join([_int(1, 8) + _bytes(2, "semantic-mcp") + opset, *_field(7, graph)])
