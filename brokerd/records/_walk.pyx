# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=False
# cython: initializedcheck=True, infer_types=False
"""The compiled twins of validation.walk_records_python and record_facts_python: the
same reads in the same order, so the same answers.

It parses hostile bytes, so every read is an index into a typed memoryview with bounds
checking on (an index past the buffer, or below zero, raises IndexError exactly where the
Python walk's `buf[i]` would), there is no pointer into the buffer, and positions are
Py_ssize_t, which cannot overflow (a position grows by under 2^32 per field, from at most
the buffer's length). IndexError and a bad varint are turned into the same
RecordStructureError as the reference, by the reference's own helpers, so the answers
(accepted, or the error's message and record_index) are equal for every input; record_facts
returns the same facts or raises the same VarintError. The tests check this on valid and
mutated batches (tests/unit/records/test_record_walk_compiled.py).

Buffers other than bytes, bytearray and memoryviews of unsigned bytes (contiguous), and
positions below zero (which Python indexing would wrap), go to the reference walk.
"""

from libc.stdint cimport int64_t, uint64_t

cdef extern from *:
    """
    #ifndef BROKERD_WALK_SOURCE_SHA256
    #define BROKERD_WALK_SOURCE_SHA256 ""
    #endif
    """
    const char *BROKERD_WALK_SOURCE_SHA256

# sha256 of the _walk.pyx this was built from (set by platform/build_extensions.py):
# validation.py uses the compiled walk only when it matches the source beside it.
SOURCE_SHA256 = BROKERD_WALK_SOURCE_SHA256.decode("ascii")

# attributes, timestampDelta, offsetDelta, keyLength, valueLength, headerCount: one byte each
cdef uint64_t MIN_RECORD_BODY = 6
cdef int VARINT_BYTES = 5  # an int32 varint
cdef int VARLONG_BYTES = 10

cdef object _reference_module = None


class _BadVarint(ValueError):
    pass


cdef object _reference():
    """validation.py, imported on first need (it imports this module itself)."""
    global _reference_module
    if _reference_module is None:
        from brokerd.records import validation

        _reference_module = validation
    return _reference_module


cdef inline int64_t _unzigzag(uint64_t raw) noexcept:
    return <int64_t>(raw >> 1) ^ -<int64_t>(raw & 1)


cdef Py_ssize_t _slow_varint(
    const unsigned char[::1] buf, Py_ssize_t pos, int limit, uint64_t *out
) except -1:
    """The raw (still zigzagged) varint of up to `limit` bytes at pos into out[0], and the
    position after it; refused where it overflows its int32 (5 bytes) or int64 (10)."""
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef int i
    cdef unsigned char b
    for i in range(limit):
        b = buf[pos + i]
        if b < 0x80:
            if limit == VARINT_BYTES:
                raw |= <uint64_t>b << shift  # at most 35 bits
                if raw >> 32:
                    raise _BadVarint(_reference()._overflow_message(i + 1))
            elif i == VARLONG_BYTES - 1 and b > 1:  # b << 63 would pass 64 bits
                raise _BadVarint(_reference()._overflow_message(i + 1))
            else:
                raw |= <uint64_t>b << shift
            out[0] = raw
            return pos + i + 1
        raw |= <uint64_t>(b & 0x7F) << shift  # shift <= 63: defined for uint64_t
        shift += 7
    raise _BadVarint(_reference()._too_long_message(limit))


cdef Py_ssize_t _walk_headers(
    const unsigned char[::1] buf, Py_ssize_t pos, Py_ssize_t record_end, Py_ssize_t index
) except -1:
    cdef uint64_t raw = 0
    cdef int64_t count
    cdef int64_t h
    pos = _slow_varint(buf, pos, VARINT_BYTES, &raw)
    count = _unzigzag(raw)
    # cdivision=False: // floors like Python's for a negative room (fields past the end)
    if count < 0 or count > (record_end - pos) // 2:
        raise _reference()._header_count_error(index, count)
    for h in range(count):
        pos = _slow_varint(buf, pos, VARINT_BYTES, &raw)
        if raw & 1:
            raise _reference()._header_key_error(index, raw)
        pos += <Py_ssize_t>(raw >> 1)
        pos = _slow_varint(buf, pos, VARINT_BYTES, &raw)
        if raw & 1:
            if raw != 1:
                raise _reference()._header_value_error(index, raw)
        else:
            pos += <Py_ssize_t>(raw >> 1)
        if pos > record_end:
            break  # the caller reports the size mismatch
    return pos


cdef inline bint _plain_bytes(object buf):
    """Whether indexing buf gives its bytes as ints 0..255, as this walk reads them (a
    memoryview of signed or char items would not, for the reference)."""
    if type(buf) is bytes or type(buf) is bytearray:
        return True
    return type(buf) is memoryview and buf.format == "B"


def walk_records(buf, pos, end, count):
    """Check that buf[pos:end] holds exactly `count` well-formed records whose offset
    deltas are 0..count-1 (validation.walk_records_python, compiled)."""
    cdef const unsigned char[::1] view
    cdef Py_ssize_t c_pos, c_end, c_count
    if not _plain_bytes(buf):
        return _reference().walk_records_python(buf, pos, end, count)
    try:
        view = buf
        c_pos = pos
        c_end = end
        c_count = count
    except (TypeError, ValueError, BufferError, OverflowError):
        return _reference().walk_records_python(buf, pos, end, count)
    if c_pos < 0:
        return _reference().walk_records_python(buf, pos, end, count)
    if c_count < 0:
        raise _reference()._count_error(count)
    if c_end > view.shape[0]:
        raise _reference()._buffer_error()
    _walk(view, c_pos, c_end, c_count, count)


cdef int _walk(
    const unsigned char[::1] buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count,
    object count_arg,
) except -1:
    """walk_records_python's loop; `count_arg` is the caller's count, for messages."""
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t start = pos
    cdef Py_ssize_t record_end
    cdef uint64_t expected  # zigzag of the offset delta record i must have: 2i
    cdef uint64_t raw = 0
    cdef uint64_t ignored = 0
    cdef unsigned char b, b1, b2
    try:
        for i in range(count):  # i < count <= PY_SSIZE_T_MAX, so 2i fits a uint64_t
            expected = <uint64_t>i << 1
            start = pos
            # length (varint), which must be positive (even once zigzagged)
            b = buf[pos]
            if b < 0x80:
                raw = b
                pos += 1
            else:
                b1 = buf[pos + 1]
                if b1 < 0x80:
                    raw = (b & 0x7F) | (<uint64_t>b1 << 7)
                    pos += 2
                else:
                    b2 = buf[pos + 2]
                    if b2 < 0x80:
                        raw = (b & 0x7F) | (<uint64_t>(b1 & 0x7F) << 7) | (<uint64_t>b2 << 14)
                        pos += 3
                    else:
                        pos = _slow_varint(buf, pos, VARINT_BYTES, &raw)
            # raw < 2^32 here, so the length is below 2^31
            record_end = pos + <Py_ssize_t>(raw >> 1)
            if raw & 1 or raw < MIN_RECORD_BODY << 1 or record_end > end:
                raise _reference()._size_error(i, count_arg, start, end, _unzigzag(raw))
            # attributes (unused in v2), then timestampDelta (varlong): skipped. Here and
            # below, varints of up to three bytes are read inline (reading the bytes that
            # _slow_varint would, in its order): a call copies the memoryview's struct.
            if buf[pos + 1] < 0x80:
                pos += 2
            elif buf[pos + 2] < 0x80:
                pos += 3
            elif buf[pos + 3] < 0x80:
                pos += 4
            else:
                pos = _slow_varint(buf, pos + 1, VARLONG_BYTES, &ignored)
            # offsetDelta (varint)
            b = buf[pos]
            if b == expected and b < 0x80:
                pos += 1
            elif b >= 0x80 and buf[pos + 1] < 0x80 and (
                (b & 0x7F) | (<uint64_t>buf[pos + 1] << 7)
            ) == expected:
                pos += 2
            else:
                if b >= 0x80 and buf[pos + 1] >= 0x80 and buf[pos + 2] < 0x80:  # 8192+
                    raw = (
                        (b & 0x7F)
                        | (<uint64_t>(buf[pos + 1] & 0x7F) << 7)
                        | (<uint64_t>buf[pos + 2] << 14)
                    )
                    pos += 3
                else:
                    pos = _slow_varint(buf, pos, VARINT_BYTES, &raw)
                if raw != expected:
                    raise _reference()._offset_delta_error(i, _unzigzag(raw))
            # key: null (zigzag 1), or a length and its bytes
            b = buf[pos]
            if b < 0x80:
                if b & 1:
                    if b != 1:
                        raise _reference()._length_error(i, "key", b)
                    pos += 1
                else:
                    pos += 1 + (b >> 1)
            else:
                b1 = buf[pos + 1]
                if b1 < 0x80:
                    raw = (b & 0x7F) | (<uint64_t>b1 << 7)
                    pos += 2
                else:
                    b2 = buf[pos + 2]
                    if b2 < 0x80:
                        raw = (b & 0x7F) | (<uint64_t>(b1 & 0x7F) << 7) | (<uint64_t>b2 << 14)
                        pos += 3
                    else:
                        pos = _slow_varint(buf, pos, VARINT_BYTES, &raw)
                if raw & 1:
                    raise _reference()._length_error(i, "key", raw)
                pos += <Py_ssize_t>(raw >> 1)
            # value, the same way
            b = buf[pos]
            if b < 0x80:
                if b & 1:
                    if b != 1:
                        raise _reference()._length_error(i, "value", b)
                    pos += 1
                else:
                    pos += 1 + (b >> 1)
            else:
                b1 = buf[pos + 1]
                if b1 < 0x80:
                    raw = (b & 0x7F) | (<uint64_t>b1 << 7)
                    pos += 2
                else:
                    b2 = buf[pos + 2]
                    if b2 < 0x80:
                        raw = (b & 0x7F) | (<uint64_t>(b1 & 0x7F) << 7) | (<uint64_t>b2 << 14)
                        pos += 3
                    else:
                        pos = _slow_varint(buf, pos, VARINT_BYTES, &raw)
                if raw & 1:
                    raise _reference()._length_error(i, "value", raw)
                pos += <Py_ssize_t>(raw >> 1)
            # headers: usually none
            if buf[pos] == 0:
                pos += 1
            else:
                pos = _walk_headers(buf, pos, record_end, i)
            if pos != record_end:
                raise _reference()._fields_end_error(i, pos - record_end)
    except IndexError:
        raise _reference()._past_end_error(i, count_arg, start, end) from None
    except _BadVarint as exc:
        raise _reference()._malformed_error(i, str(exc)) from None
    if pos != end:
        raise _reference()._remaining_error(end - pos, count_arg)
    return 0


# -- record_facts: what the record rules read of each record a walk accepted --------------


class _WrapsAround(Exception):
    """A position below zero, which Python indexing would wrap: the reference decides."""


cdef Py_ssize_t _decode_varint(
    const unsigned char[::1] buf, Py_ssize_t pos, int64_t *out
) except -1:
    """varint.decode_varint: the signed value at pos into out[0], and the position after
    it; the same VarintError for a varint past the buffer, over 10 bytes or over 64 bits."""
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef bint wide = False  # bits past the 64th, which Python's int would keep
    cdef unsigned char b
    if pos < 0:
        raise _WrapsAround()
    while True:
        if pos >= buf.shape[0]:
            raise _varint_error("varint runs past the end of the buffer")
        if shift > 63:
            raise _varint_error("varint longer than 10 bytes")
        b = buf[pos]
        pos += 1
        if shift == 63:  # the tenth byte: only its lowest bit fits
            wide = wide or (b & 0x7F) > 1
            raw |= <uint64_t>(b & 1) << 63
        else:
            raw |= <uint64_t>(b & 0x7F) << shift
        if not b & 0x80:
            if wide:
                raise _varint_error("varint exceeds 64 bits")
            out[0] = _unzigzag(raw)
            return pos
        shift += 7


cdef object _varint_error(str message):
    from brokerd.records.varint import VarintError

    return VarintError(message)


def record_facts(buf, pos, count):
    """(timestampDelta, has a key) of each record (validation.record_facts_python,
    compiled), for records walk_records accepted."""
    cdef const unsigned char[::1] view
    cdef Py_ssize_t c_pos, c_count
    if not _plain_bytes(buf):
        return _reference().record_facts_python(buf, pos, count)
    try:
        view = buf
        c_pos = pos
        c_count = count
    except (TypeError, ValueError, BufferError, OverflowError):
        return _reference().record_facts_python(buf, pos, count)
    try:
        return _record_facts(view, c_pos, c_count)
    except _WrapsAround:
        return _reference().record_facts_python(buf, pos, count)


cdef list _record_facts(const unsigned char[::1] buf, Py_ssize_t pos, Py_ssize_t count):
    cdef list facts = []
    cdef Py_ssize_t n = buf.shape[0]
    cdef Py_ssize_t body, at, k
    cdef int64_t length = 0
    cdef int64_t timestamp_delta = 0
    cdef int64_t ignored = 0
    cdef int64_t key_length = 0
    for k in range(count):
        body = _decode_varint(buf, pos, &length)
        at = _decode_varint(buf, body + 1, &timestamp_delta)
        at = _decode_varint(buf, at, &ignored)  # offsetDelta
        _decode_varint(buf, at, &key_length)
        facts.append((timestamp_delta, key_length >= 0))
        # body + length without overflow: any position at or past the buffer's end reads
        # as "past the end" next, and one below zero goes to the reference
        pos = n if length > n - body else body + length
    return facts
