# distutils: language = c++
# distutils: extra_compile_args = -O3 -std=c++17
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Parquet read natively for the common case (bpe_fast.inputs reads a .parquet file's text column with it when
the file's footer says it can, with pyarrow otherwise).

read_footer parses a file's footer (FileMetaData, Thrift's compact protocol: fields it does not know are skipped
whatever their type) into what the caller checks and plans with: the schema's names, the text column's element
and, for each row group, the text column's chunk. ColumnChunk decodes the pages of one column chunk (its bytes
read by the caller): data pages v1 and v2 and a dictionary page, uncompressed or Snappy (a raw Snappy decoder of
its own), definition levels of a top-level OPTIONAL column (RLE/bit-packed hybrid, or the old BIT_PACKED),
values PLAIN, dictionary indices (PLAIN_DICTIONARY, RLE_DICTIONARY) or DELTA_LENGTH_BYTE_ARRAY. Its read() gives
the next documents, a null an empty one, as (bytes, int64 bounds from 0), about max_bytes at a time.

Every length, offset, count and varint read from the file is checked against the bytes it lies in before it is
used, and every size against what the bytes could hold (Snappy expands at most 22 times; a dictionary page's
values take 4 bytes each at least), so a damaged file is a ValueError naming the byte offset reached (the
caller names the file), never a read outside a buffer nor a huge allocation. The loops run without the GIL and
touch no Python object.
"""
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy
from libcpp.vector cimport vector

from bpe_fast._revec cimport append_or_end, push_or_end, resize_or_end

from bpe_fast._numpy import np     # (NumPy imported when first used: see there)

cdef extern from *:
    """
    #include <cstdint>
    #include <cstring>
    // 8 bytes at p as a little-endian number, whatever the machine's byte order
    static inline uint64_t bpe_fast_pq_le64(const uint8_t* p) {
        uint64_t x;
        std::memcpy(&x, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = __builtin_bswap64(x);
    #endif
        return x;
    }
    """
    uint64_t le64 "bpe_fast_pq_le64"(const uint8_t* p) noexcept nogil

# Parquet's enums (parquet.thrift)
cdef enum:
    BYTE_ARRAY = 6
    REQUIRED = 0
    OPTIONAL = 1
    UNCOMPRESSED = 0
    SNAPPY = 1
    PLAIN = 0
    PLAIN_DICTIONARY = 2
    RLE = 3
    BIT_PACKED = 4
    DELTA_LENGTH_BYTE_ARRAY = 6
    RLE_DICTIONARY = 8
    DATA_PAGE = 0
    INDEX_PAGE = 1
    DICTIONARY_PAGE = 2
    DATA_PAGE_V2 = 3

# Thrift compact protocol's types
cdef enum:
    T_TRUE = 1
    T_FALSE = 2
    T_BYTE = 3
    T_I16 = 4
    T_I32 = 5
    T_I64 = 6
    T_DOUBLE = 7
    T_BINARY = 8
    T_LIST = 9
    T_SET = 10
    T_MAP = 11
    T_STRUCT = 12

cdef enum:
    MAX_DEPTH = 64                  # nested Thrift structs skipped at most (a damaged footer must not recurse on)
    SNAPPY_MAX_RATIO = 22           # Snappy expands at most 64 bytes from a 3-byte copy: 21.3 times

# the required fields of ColumnMetaData (a bit each: type, encodings, path_in_schema, codec, num_values, the two
# sizes, data_page_offset), of a PageHeader (type, its sizes), and of a DataPageHeader, DictionaryPageHeader and
# DataPageHeaderV2 (their fields 1-4, 1-2 and 1-6)
cdef uint32_t REQUIRED_COLUMN_META = 0x2FE
cdef uint32_t REQUIRED_PAGE = 0xE
cdef uint32_t REQUIRED_DATA_PAGE = 0x1E
cdef uint32_t REQUIRED_DICTIONARY_PAGE = 0x6
cdef uint32_t REQUIRED_DATA_PAGE_V2 = 0x7E
cdef uint64_t MAX_RUN = 1 << 31    # values of an RLE or bit-packed run, at most (a page holds fewer)

SUPPORTED_CODECS = frozenset((UNCOMPRESSED, SNAPPY))
# the encodings a column chunk's footer may list for the native reader: values PLAIN, dictionary indices,
# DELTA_LENGTH_BYTE_ARRAY; levels RLE or BIT_PACKED (listed for repetition levels by some writers; a flat
# column has none)
SUPPORTED_ENCODINGS = frozenset((PLAIN, PLAIN_DICTIONARY, RLE, BIT_PACKED, DELTA_LENGTH_BYTE_ARRAY, RLE_DICTIONARY))


# ---- Thrift's compact protocol ----------------------------------------------------------------------------

cdef struct Cursor:
    const uint8_t* s
    Py_ssize_t pos
    Py_ssize_t end
    const char* error           # the first failure; NULL while none (then pos is end: nothing more is read)


cdef inline void cursor(Cursor* c, const uint8_t* s, Py_ssize_t pos, Py_ssize_t end) noexcept nogil:
    c.s, c.pos, c.end = s, pos, end
    c.error = NULL


cdef inline void fail(Cursor* c, const char* why) noexcept nogil:
    if c.error == NULL:
        c.error = why
    c.pos = c.end


cdef uint64_t varint(Cursor* c) noexcept nogil:
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if c.pos >= c.end:
            fail(c, "truncated varint")
            return 0
        b = c.s[c.pos]
        c.pos += 1
        if shift == 63 and b > 1:
            fail(c, "varint out of range")
            return 0
        value |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            return value
        shift += 7


cdef inline int64_t zigzag(Cursor* c) noexcept nogil:
    cdef uint64_t v = varint(c)
    return <int64_t>(v >> 1) ^ -<int64_t>(v & 1)


cdef int32_t read_i32(Cursor* c) noexcept nogil:
    cdef int64_t v = zigzag(c)
    if v < -2147483648 or v > 2147483647:
        fail(c, "32-bit integer out of range")
        return 0
    return <int32_t>v


cdef inline uint8_t read_byte(Cursor* c) noexcept nogil:
    if c.pos >= c.end:
        fail(c, "truncated")
        return 0
    c.pos += 1
    return c.s[c.pos - 1]


cdef Py_ssize_t read_binary(Cursor* c, Py_ssize_t* length) noexcept nogil:
    """The start of a binary (string) value, its length in length[0]."""
    cdef uint64_t n = varint(c)
    cdef Py_ssize_t start = c.pos
    length[0] = 0
    if n > <uint64_t>(c.end - c.pos):
        fail(c, "string longer than the footer")
        return start
    length[0] = <Py_ssize_t>n
    c.pos += <Py_ssize_t>n
    return start


cdef int64_t list_header(Cursor* c, int* kind) noexcept nogil:
    """A list's (or set's) size, its elements' type in kind[0]; each element takes a byte at least."""
    cdef uint8_t b = read_byte(c)
    cdef uint64_t n = b >> 4
    kind[0] = b & 0x0F
    if kind[0] < T_TRUE or kind[0] > T_STRUCT:
        fail(c, "list of an unknown type")
        return 0
    if n == 15:
        n = varint(c)
    if n > <uint64_t>(c.end - c.pos):
        fail(c, "list longer than the footer")
        return 0
    return <int64_t>n


cdef bint next_field(Cursor* c, int16_t* last, int* kind) noexcept nogil:
    """Reads a struct's next field header: False at its end (STOP, or a failure); the field's id in last[0] (the
    ids are deltas from the previous one), its type in kind[0]."""
    cdef uint8_t b = read_byte(c)
    cdef int64_t fid
    if b == 0 or c.error != NULL:
        return False
    kind[0] = b & 0x0F
    if b >> 4:
        fid = last[0] + (b >> 4)
    else:
        fid = zigzag(c)
    if fid < -32768 or fid > 32767:
        fail(c, "field id out of range")
        return False
    last[0] = <int16_t>fid
    return c.error == NULL


cdef void skip(Cursor* c, int kind, int depth) noexcept nogil:
    """Skips a value of the given type (a field the reader does not use, whatever it is)."""
    cdef int64_t n, i
    cdef int inner, key, value
    cdef int16_t last = 0
    cdef Py_ssize_t length
    if depth > MAX_DEPTH:
        fail(c, "nested too deep")
        return
    if kind == T_TRUE or kind == T_FALSE:       # a boolean field's value is its type
        return
    if kind == T_BYTE:
        read_byte(c)
    elif kind == T_I16 or kind == T_I32 or kind == T_I64:
        varint(c)
    elif kind == T_DOUBLE:
        if c.end - c.pos < 8:
            fail(c, "truncated double")
        else:
            c.pos += 8
    elif kind == T_BINARY:
        read_binary(c, &length)
    elif kind == T_LIST or kind == T_SET:
        n = list_header(c, &inner)
        for i in range(n):
            skip_element(c, inner, depth + 1)
            if c.error != NULL:
                return
    elif kind == T_MAP:
        n = <int64_t>varint(c)
        if n < 0 or n > c.end - c.pos:
            fail(c, "map longer than the footer")
            return
        if n:
            inner = read_byte(c)
            key, value = inner >> 4, inner & 0x0F
            for i in range(n):
                skip_element(c, key, depth + 1)
                skip_element(c, value, depth + 1)
                if c.error != NULL:
                    return
    elif kind == T_STRUCT:
        while next_field(c, &last, &inner):
            skip(c, inner, depth + 1)
    else:
        fail(c, "unknown Thrift type")


cdef inline void skip_element(Cursor* c, int kind, int depth) noexcept nogil:
    if kind == T_TRUE or kind == T_FALSE:       # a boolean in a list or map is a byte
        read_byte(c)
    else:
        skip(c, kind, depth)


cdef inline int64_t read_int(Cursor* c, int kind) noexcept nogil:
    """An integer field's value (i16, i32 or i64: each a zigzag varint; a byte as it is)."""
    if kind == T_I16 or kind == T_I32 or kind == T_I64:
        return zigzag(c)
    if kind == T_BYTE:
        return <int8_t>read_byte(c)
    fail(c, "an integer field of another type")
    return 0


cdef void check_struct(Cursor* c, const int* required, int n, int depth) noexcept nogil:
    """Skips a struct whose fields 1..n-1 are required of type required[id] (0: not required; T_TRUE: a
    boolean): fails when one is not there with its type, as Thrift's generated readers do (a field of another
    type than its own is skipped, so missing)."""
    cdef int16_t last = 0
    cdef int kind, i
    cdef uint32_t seen = 0, want = 0
    for i in range(1, n):
        if required[i]:
            want |= (<uint32_t>1) << i
    while next_field(c, &last, &kind):
        if 0 < last < n and required[last] and (kind == required[last] or required[last] == T_TRUE
                                                and kind == T_FALSE):
            seen |= (<uint32_t>1) << last
        skip(c, kind, depth + 1)
    if c.error == NULL and seen != want:
        fail(c, "a struct lacks a required field")


cdef void check_list(Cursor* c, const int* required, int n, int depth) noexcept nogil:
    """Skips a list of such structs."""
    cdef int inner
    cdef int64_t count = list_header(c, &inner), i
    if count and inner != T_STRUCT:
        fail(c, "a list of structs holds something else")
        return
    for i in range(count):
        check_struct(c, required, n, depth)
        if c.error != NULL:
            return


# the required fields of the structs the footer and page headers hold (by field id: its Thrift type)
cdef int PAGE_ENCODING_STATS[4]
PAGE_ENCODING_STATS[:] = [0, T_I32, T_I32, T_I32]
cdef int KEY_VALUE[2]
KEY_VALUE[:] = [0, T_BINARY]
cdef int SORTING_COLUMN[4]
SORTING_COLUMN[:] = [0, T_I32, T_TRUE, T_TRUE]
cdef int DECIMAL_TYPE[3]
DECIMAL_TYPE[:] = [0, T_I32, T_I32]
cdef int TIME_TYPE[3]
TIME_TYPE[:] = [0, T_TRUE, T_STRUCT]
cdef int INT_TYPE[3]
INT_TYPE[:] = [0, T_BYTE, T_TRUE]
cdef int NOTHING[1]
NOTHING[:] = [0]


# ---- the footer -------------------------------------------------------------------------------------------

cdef struct Element:                # a SchemaElement (-1: not given)
    Py_ssize_t name_at
    Py_ssize_t name_len
    int64_t type
    int64_t repetition
    int64_t children
    int64_t converted
    int64_t logical                 # the field id of the LogicalType union's member
    bint named


cdef struct Chunk:                  # the text column's ColumnChunk in a row group, and the row group's rows
    int64_t rows
    int64_t type
    int64_t codec
    uint64_t encodings              # bit e for encoding e (bit 63: one of 63 or more)
    int64_t num_values
    int64_t uncompressed
    int64_t compressed
    int64_t data_page
    int64_t dictionary_page
    int64_t path_parts              # path_in_schema's length
    bint path_matches               # path_in_schema is [the text column]
    bint file_path                  # the data is in another file
    bint encrypted                  # crypto_metadata or encrypted_column_metadata
    bint has_meta


cdef void parse_element(Cursor* c, Element* e) noexcept nogil:
    cdef int16_t last = 0, inner_last
    cdef int kind, inner_kind
    e.type = e.repetition = e.children = e.converted = e.logical = -1
    e.named = False
    e.name_at = e.name_len = 0
    while next_field(c, &last, &kind):
        if last == 1 and kind == T_I32:
            e.type = read_i32(c)
        elif last == 3 and kind == T_I32:
            e.repetition = read_i32(c)
        elif last == 4 and kind == T_BINARY:
            e.name_at = read_binary(c, &e.name_len)
            e.named = True
        elif last == 5 and kind == T_I32:
            e.children = read_i32(c)
            if e.children < 0:
                fail(c, "negative num_children")
        elif last == 6 and kind == T_I32:
            e.converted = read_i32(c)
        elif last == 10 and kind == T_STRUCT:       # LogicalType: a union, one member set (a struct)
            inner_last = 0
            while next_field(c, &inner_last, &inner_kind):
                if e.logical < 0:
                    e.logical = inner_last
                if inner_kind != T_STRUCT:
                    skip(c, inner_kind, 1)
                elif inner_last == 5:
                    check_struct(c, DECIMAL_TYPE, 3, 1)
                elif inner_last == 7 or inner_last == 8:
                    check_struct(c, TIME_TYPE, 3, 1)
                elif inner_last == 10:
                    check_struct(c, INT_TYPE, 3, 1)
                else:
                    check_struct(c, NOTHING, 1, 1)
        else:
            skip(c, kind, 0)


cdef void parse_column_meta(Cursor* c, Chunk* k, const uint8_t* name, Py_ssize_t name_len) noexcept nogil:
    cdef int16_t last = 0
    cdef int kind, inner
    cdef int64_t n, i, e
    cdef Py_ssize_t at, length
    cdef uint32_t seen = 0
    k.has_meta = True
    while next_field(c, &last, &kind):
        if 0 < last < 32 and kind == (T_I32 if last == 1 or last == 4 else T_LIST if last <= 3 else T_I64):
            seen |= (<uint32_t>1) << last       # (a required field there with its type)
        if last == 1 and kind == T_I32:
            k.type = read_i32(c)
        elif last == 2 and kind == T_LIST:
            n = list_header(c, &inner)
            for i in range(n):
                e = read_int(c, inner)
                k.encodings |= (<uint64_t>1) << (e if 0 <= e < 63 else 63)
        elif last == 3 and kind == T_LIST:
            n = list_header(c, &inner)
            k.path_parts = n
            for i in range(n):
                if inner != T_BINARY:
                    fail(c, "path_in_schema holds no strings")
                    return
                at = read_binary(c, &length)
                if n == 1 and length == name_len and memcmp(c.s + at, name, name_len) == 0:
                    k.path_matches = True
        elif last == 4 and kind == T_I32:
            k.codec = read_i32(c)
        elif last == 5 and kind == T_I64:
            k.num_values = zigzag(c)
        elif last == 6 and kind == T_I64:
            k.uncompressed = zigzag(c)
        elif last == 7 and kind == T_I64:
            k.compressed = zigzag(c)
        elif last == 9 and kind == T_I64:
            k.data_page = zigzag(c)
        elif last == 11 and kind == T_I64:
            k.dictionary_page = zigzag(c)
        elif last == 13 and kind == T_LIST:
            check_list(c, PAGE_ENCODING_STATS, 4, 1)
        else:
            skip(c, kind, 1)
    if (seen & REQUIRED_COLUMN_META) != REQUIRED_COLUMN_META:
        fail(c, "column metadata lacks a required field")


cdef void parse_column(Cursor* c, Chunk* k, const uint8_t* name, Py_ssize_t name_len) noexcept nogil:
    cdef int16_t last = 0
    cdef int kind
    cdef bint offset = False
    while next_field(c, &last, &kind):
        if last == 2 and kind == T_I64:
            offset = True
            skip(c, kind, 1)
        elif last == 1:
            k.file_path = True
            skip(c, kind, 1)
        elif last == 3 and kind == T_STRUCT:
            parse_column_meta(c, k, name, name_len)
        elif last == 8 or last == 9:
            k.encrypted = True
            skip(c, kind, 1)
        else:
            skip(c, kind, 1)
    if not offset:
        fail(c, "column chunk without its file_offset")


cdef void parse_row_groups(Cursor* c, int64_t leaf, int64_t leaves, const uint8_t* name, Py_ssize_t name_len,
                           vector[Chunk]* chunks) noexcept nogil:
    cdef int64_t n, g, m, j
    cdef int kind, inner, column_kind
    cdef int16_t last
    cdef Chunk k, other
    cdef bint has_rows, has_columns, has_size
    n = list_header(c, &kind)
    if kind != T_STRUCT and n:
        fail(c, "row groups are not structs")
        return
    for g in range(n):
        memset_chunk(&k)
        last = 0
        has_rows = has_columns = has_size = False
        while next_field(c, &last, &kind):
            if last == 1 and kind == T_LIST:
                has_columns = True
                m = list_header(c, &column_kind)
                if column_kind != T_STRUCT and m:
                    fail(c, "columns are not structs")
                    return
                if m != leaves:
                    fail(c, "a row group's columns are not the schema's")
                    return
                for j in range(m):
                    if j == leaf:
                        parse_column(c, &k, name, name_len)
                    else:                   # (checked as the text column's is)
                        memset_chunk(&other)
                        parse_column(c, &other, name, name_len)
            elif last == 2 and kind == T_I64:
                has_size = True
                skip(c, kind, 1)
            elif last == 3 and kind == T_I64:
                k.rows = zigzag(c)
                has_rows = True
            elif last == 4 and kind == T_LIST:
                check_list(c, SORTING_COLUMN, 4, 1)
            else:
                skip(c, kind, 1)
        if c.error != NULL:
            return
        if not (has_rows and has_columns and has_size) or k.rows < 0:
            fail(c, "a row group without its rows or columns")
            return
        push_or_end(chunks[0], k)


cdef inline void memset_chunk(Chunk* k) noexcept nogil:
    k.rows = k.type = k.codec = k.num_values = k.uncompressed = k.compressed = k.data_page = -1
    k.dictionary_page = -1
    k.encodings = 0
    k.path_parts = 0
    k.path_matches = k.file_path = k.encrypted = k.has_meta = False


cdef struct Footer:
    int64_t num_rows
    bint encrypted
    int64_t leaf                    # the text column's index among the leaves (-1: none)
    int64_t leaves
    int64_t text_element            # its index in the schema (-1: none)
    int64_t matches                 # top-level columns of that name


cdef const char* parse_footer(const uint8_t* s, Py_ssize_t n, const uint8_t* name, Py_ssize_t name_len,
                              Footer* f, vector[Element]* elements, vector[int64_t]* tops,
                              vector[Chunk]* chunks) noexcept nogil:
    """FileMetaData: the schema, then the row groups (wherever they lie: the leaf is known from the schema)."""
    cdef Cursor c
    cdef int16_t last = 0
    cdef int kind, inner
    cdef Py_ssize_t schema_at = -1, groups_at = -1
    cdef bint version = False
    cdef int64_t count, i, j, pending
    cdef Element e
    cursor(&c, s, 0, n)
    f.num_rows, f.encrypted, f.leaf, f.leaves, f.text_element, f.matches = -1, False, -1, 0, -1, 0
    while next_field(&c, &last, &kind):
        if last == 1 and kind == T_I32:
            version = True
            skip(&c, kind, 0)
        elif last == 2 and kind == T_LIST:
            schema_at = c.pos
            skip(&c, kind, 0)
        elif last == 3 and kind == T_I64:
            f.num_rows = zigzag(&c)
        elif last == 4 and kind == T_LIST:
            groups_at = c.pos
            skip(&c, kind, 0)
        elif last == 5 and kind == T_LIST:
            check_list(&c, KEY_VALUE, 2, 0)
        elif last == 8:
            f.encrypted = True
            skip(&c, kind, 0)
        else:
            skip(&c, kind, 0)
    if c.error != NULL:
        return c.error
    if schema_at < 0 or groups_at < 0 or f.num_rows < 0 or not version:
        return "the footer lacks its schema, row groups or rows"
    c.pos = schema_at
    count = list_header(&c, &kind)
    if c.error != NULL:
        return c.error
    if kind != T_STRUCT or count == 0:
        return "the schema is empty"
    for i in range(count):
        parse_element(&c, &e)
        if c.error != NULL:
            return c.error
        if not e.named:
            return "a schema element without a name"
        push_or_end(elements[0], e)
    if elements[0][0].children < 0:
        return "the schema's root is no group"
    i = 1
    for j in range(elements[0][0].children):
        if i >= count:
            return "the schema ends before the root's columns"
        push_or_end(tops[0], i)
        if elements[0][i].name_len == name_len and memcmp(s + elements[0][i].name_at, name, name_len) == 0:
            f.matches += 1
            if f.matches == 1:
                f.text_element, f.leaf = i, f.leaves
        pending = 1                 # the elements left of the column's subtree
        while pending:
            if i >= count:
                return "the schema ends inside a column"
            pending -= 1
            if elements[0][i].children >= 0:
                pending += elements[0][i].children
                if pending > count:
                    return "the schema's groups have more children than it has elements"
            else:
                f.leaves += 1
            i += 1
    if i != count:
        return "schema elements outside the root"
    c.pos = groups_at
    parse_row_groups(&c, f.leaf, f.leaves, name, name_len, chunks)
    return c.error


def read_footer(const uint8_t[::1] footer not None, bytes column not None):
    """The FileMetaData of a Parquet file (footer: its bytes, without the length and magic after them) as
    (num_rows, encrypted, names of the schema's elements (bytes), the indices of the top-level ones, the
    top-level columns named `column`, the first one's element index (-1: none), the text column's element
    (type, repetition, num_children, converted_type, logical type member: -1 where not given; None if none),
    [the text column's chunk in each row group]), a chunk being (rows, type, codec, encodings (a bit each),
    num_values, total_uncompressed_size, total_compressed_size, data_page_offset, dictionary_page_offset,
    path_in_schema is [column], in another file, encrypted, has its metadata). ValueError for a footer that does
    not parse."""
    cdef vector[Element] elements
    cdef vector[int64_t] tops
    cdef vector[Chunk] chunks
    cdef Footer f
    cdef const char* error
    cdef const uint8_t* name = column
    cdef Py_ssize_t name_len = len(column)
    cdef Py_ssize_t n = footer.shape[0]
    cdef const uint8_t* s = &footer[0] if n else NULL
    with nogil:
        error = parse_footer(s, n, name, name_len, &f, &elements, &tops, &chunks)
    if error != NULL:
        raise ValueError(error.decode())
    names = [PyBytes_FromStringAndSize(<const char*>s + e.name_at, e.name_len) for e in elements]
    text = None
    if f.text_element >= 0:
        e = elements[f.text_element]
        text = (e.type, e.repetition, e.children, e.converted, e.logical)
    groups = [(k.rows, k.type, k.codec, k.encodings, k.num_values, k.uncompressed, k.compressed, k.data_page,
               k.dictionary_page, k.path_matches, k.file_path, k.encrypted, k.has_meta) for k in chunks]
    return f.num_rows, f.encrypted, names, list(tops), f.matches, f.text_element, text, groups


# ---- Snappy -----------------------------------------------------------------------------------------------

cdef const char* snappy(const uint8_t* src, Py_ssize_t n, uint8_t* dst, Py_ssize_t m) noexcept nogil:
    """Decompresses the raw Snappy block src[:n] into exactly dst[:m]; NULL, or what is wrong."""
    cdef Cursor c
    cdef uint64_t length
    cdef Py_ssize_t ip, op = 0, size, offset, k
    cdef uint8_t tag
    cdef int extra
    cursor(&c, src, 0, n)
    length = varint(&c)
    if c.error != NULL or length != <uint64_t>m:
        return "Snappy length is not the page's"
    ip = c.pos
    while ip < n:
        tag = src[ip]
        ip += 1
        if (tag & 3) == 0:                  # a literal: its length - 1 in the tag, or in the 1-4 bytes after
            size = (tag >> 2) + 1
            if size > 60:
                extra = <int>size - 60
                if n - ip < extra:
                    return "truncated Snappy literal"
                size = 0
                for k in range(extra):
                    size |= (<Py_ssize_t>src[ip + k]) << (8 * k)
                size += 1
                ip += extra
            if size > n - ip or size > m - op:
                return "Snappy literal out of bounds"
            if size <= 16 and n - ip >= 16 and m - op >= 16:
                memcpy(dst + op, src + ip, 16)      # (a constant size: one move)
            else:
                memcpy(dst + op, src + ip, size)
            op += size
            ip += size
            continue
        if (tag & 3) == 1:                  # a copy: 4-11 bytes, an 11-bit offset
            if ip >= n:
                return "truncated Snappy copy"
            size = ((tag >> 2) & 7) + 4
            offset = ((<Py_ssize_t>(tag >> 5)) << 8) | src[ip]
            ip += 1
        elif (tag & 3) == 2:                # 1-64 bytes, a 16-bit offset
            if n - ip < 2:
                return "truncated Snappy copy"
            size = (tag >> 2) + 1
            offset = src[ip] | (<Py_ssize_t>src[ip + 1] << 8)
            ip += 2
        else:                               # 1-64 bytes, a 32-bit offset
            if n - ip < 4:
                return "truncated Snappy copy"
            size = (tag >> 2) + 1
            offset = (src[ip] | (<Py_ssize_t>src[ip + 1] << 8) | (<Py_ssize_t>src[ip + 2] << 16)
                      | (<Py_ssize_t>src[ip + 3] << 24))
            ip += 4
        if offset == 0 or offset > op or size > m - op:
            return "Snappy copy out of bounds"
        if offset >= 16 and m - op >= size + 16:
            # 16 bytes at a time: each 16 read lie before the 16 written (offset >= 16); the last may write past
            # size, within dst, to be overwritten next
            memcpy(dst + op, dst + op - offset, 16)
            k = 16
            while k < size:
                memcpy(dst + op + k, dst + op + k - offset, 16)
                k += 16
        elif offset >= 8 and m - op >= size + 8:
            k = 0
            while k < size:
                memcpy(dst + op + k, dst + op + k - offset, 8)
                k += 8
        else:
            for k in range(size):           # overlapping (a run repeated), or near dst's end
                dst[op + k] = dst[op + k - offset]
        op += size
    if op != m:
        return "Snappy data shorter than its length"
    return NULL


def snappy_decompress(const uint8_t[::1] data not None, Py_ssize_t length):
    """The raw Snappy block data decompressed (its length: `length`, as its preamble must say); ValueError if it
    is not one (for the tests)."""
    cdef vector[uint8_t] out
    cdef const char* error
    cdef Py_ssize_t n = data.shape[0]
    if length < 0 or length > SNAPPY_MAX_RATIO * n + 64:
        raise ValueError("length out of range")
    resize_or_end(out, length + 1)
    with nogil:
        error = snappy(&data[0] if n else NULL, n, out.data(), length)
    if error != NULL:
        raise ValueError(error.decode())
    return PyBytes_FromStringAndSize(<const char*>out.data(), length)


# ---- levels, dictionary indices, lengths ------------------------------------------------------------------

cdef struct Hybrid:                 # the RLE/bit-packed hybrid: levels, dictionary indices
    const uint8_t* s
    Py_ssize_t pos
    Py_ssize_t end
    int width
    int64_t left                    # values left in the current run
    bint packed
    uint32_t value                  # an RLE run's
    Py_ssize_t run_at               # a bit-packed run's bytes
    Py_ssize_t run_end
    int64_t index                   # the next value's index in the bit-packed run (or in BIT_PACKED levels)
    bint legacy                     # the old BIT_PACKED levels: width 1, most significant bit first


cdef inline void hybrid_init(Hybrid* h, const uint8_t* s, Py_ssize_t n, int width, bint legacy) noexcept nogil:
    h.s, h.pos, h.end, h.width, h.left, h.packed, h.value = s, 0, n, width, 0, False, 0
    h.run_at, h.run_end, h.index, h.legacy = 0, 0, 0, legacy


cdef inline uint32_t bits_at(const uint8_t* s, Py_ssize_t at, Py_ssize_t end, int64_t bit, int width,
                             bint* ok) noexcept nogil:
    """The width bits (LSB first) at bit `bit` of s[at:end]; ok[0] False when they are not all there."""
    cdef Py_ssize_t byte = at + <Py_ssize_t>(bit >> 3)
    cdef int shift = <int>(bit & 7), k, need
    cdef uint64_t word = 0
    if width == 0:
        return 0
    if end - byte >= 8:
        word = le64(s + byte)
    else:
        need = (shift + width + 7) >> 3
        if end - byte < need:
            ok[0] = False
            return 0
        for k in range(need):
            word |= (<uint64_t>s[byte + k]) << (8 * k)
    return <uint32_t>((word >> shift) & ((<uint64_t>1 << width) - 1))


cdef int hybrid_next(Hybrid* h, uint32_t* out, const char** why) noexcept nogil:
    cdef Cursor c
    cdef uint64_t header, count
    cdef int k, nbytes
    cdef bint ok = True
    if h.legacy:
        if h.index >= (h.end - h.pos) * 8:
            why[0] = "levels end early"
            return -1
        out[0] = (h.s[h.pos + (h.index >> 3)] >> (7 - (h.index & 7))) & 1
        h.index += 1
        return 0
    while h.left == 0:
        if h.pos >= h.end:
            why[0] = "levels or dictionary indices end early"
            return -1
        cursor(&c, h.s, h.pos, h.end)
        header = varint(&c)
        if c.error != NULL:
            why[0] = c.error
            return -1
        h.pos = c.pos
        count = header >> 1
        if count == 0:                      # (a run of nothing ends the data, as Arrow reads it)
            why[0] = "levels or dictionary indices end early"
            return -1
        if header & 1:                      # a bit-packed run of count groups of 8 values
            if count > MAX_RUN // 8:
                why[0] = "bit-packed run too long"
                return -1
            if count * <uint64_t>h.width > <uint64_t>(h.end - h.pos):
                why[0] = "bit-packed run longer than its data"     # (Arrow refuses a run cut short too)
                return -1
            h.packed, h.left, h.index, h.run_at = True, <int64_t>count * 8, 0, h.pos
            h.run_end = h.pos + <Py_ssize_t>(count * <uint64_t>h.width)
            h.pos = h.run_end
        else:                               # an RLE run: count times the value in the bytes after
            if count > MAX_RUN:
                why[0] = "RLE run too long"
                return -1
            nbytes = (h.width + 7) >> 3
            if h.end - h.pos < nbytes:
                why[0] = "truncated RLE run"
                return -1
            h.value = 0
            for k in range(nbytes):
                h.value |= (<uint32_t>h.s[h.pos + k]) << (8 * k)
            h.pos += nbytes
            if h.width < 32 and (h.value >> h.width):
                why[0] = "RLE value wider than its bit width"
                return -1
            h.packed, h.left = False, <int64_t>count
    h.left -= 1
    if not h.packed:
        out[0] = h.value
        return 0
    out[0] = bits_at(h.s, h.run_at, h.run_end, h.index * h.width, h.width, &ok)
    h.index += 1
    if not ok:
        why[0] = "bit-packed run ends early"
        return -1
    return 0


cdef struct Delta:                  # DELTA_BINARY_PACKED (the lengths of DELTA_LENGTH_BYTE_ARRAY)
    const uint8_t* s
    Py_ssize_t pos
    Py_ssize_t end
    int64_t per_block               # values in a block, miniblocks in one, values in a miniblock
    int64_t minis
    int64_t per_mini
    int64_t left                    # values left to give
    bint first_pending
    uint32_t last                   # the last value given (int32 arithmetic wraps)
    uint32_t min_delta
    Py_ssize_t widths_at            # the current block's bit widths
    int64_t mini                    # the next miniblock of the block (minis: the block is done)
    int64_t mini_left               # values left in the current miniblock
    Py_ssize_t mini_at
    int width
    int64_t mini_index


cdef const char* delta_init(Delta* d, const uint8_t* s, Py_ssize_t n, int64_t most,
                            Py_ssize_t* data_at) noexcept nogil:
    """Reads the header and walks the blocks (checking each needed miniblock lies within s[:n]), for where the
    encoded values end (data_at[0]). most: the values there can be (the page's)."""
    cdef Cursor c
    cdef int64_t first, remaining, m, width
    cdef Py_ssize_t p
    cursor(&c, s, 0, n)
    d.s, d.end = s, n
    d.per_block = <int64_t>varint(&c)
    d.minis = <int64_t>varint(&c)
    d.left = <int64_t>varint(&c)
    first = zigzag(&c)
    if c.error != NULL:
        return c.error
    if (d.per_block <= 0 or d.per_block % 128 or d.per_block > (1 << 20) or d.minis <= 0
            or d.per_block % d.minis or (d.per_block // d.minis) % 32):
        return "DELTA_BINARY_PACKED header out of range"
    if d.left < 0 or d.left > most:
        return "DELTA_BINARY_PACKED holds more values than its page"
    if first < -2147483648 or first > 2147483647:
        return "DELTA_BINARY_PACKED first value out of range"
    d.per_mini = d.per_block // d.minis
    d.first_pending = d.left > 0
    d.last = <uint32_t>first
    d.mini, d.mini_left = d.minis, 0
    d.pos = c.pos
    remaining = d.left - 1 if d.left > 0 else 0
    while remaining > 0:
        zigzag(&c)
        if c.error != NULL:
            return c.error
        if c.end - c.pos < d.minis:
            return "truncated DELTA_BINARY_PACKED block"
        p = c.pos
        c.pos += d.minis
        m = 0
        while m < d.minis and remaining > 0:
            width = s[p + m]
            if width > 32:
                return "DELTA_BINARY_PACKED bit width over 32"
            if c.end - c.pos < d.per_mini * width // 8:
                return "truncated DELTA_BINARY_PACKED miniblock"
            c.pos += d.per_mini * width // 8
            remaining -= min(remaining, d.per_mini)
            m += 1
    data_at[0] = c.pos
    return NULL


cdef int delta_next(Delta* d, uint32_t* out, const char** why) noexcept nogil:
    cdef Cursor c
    cdef bint ok = True
    cdef int64_t v
    if d.left <= 0:
        why[0] = "more values than DELTA_BINARY_PACKED holds"
        return -1
    d.left -= 1
    if d.first_pending:
        d.first_pending = False
        out[0] = d.last
        return 0
    if d.mini_left == 0:
        if d.mini == d.minis:               # the next block: its min delta and bit widths
            cursor(&c, d.s, d.pos, d.end)
            v = zigzag(&c)
            if c.error != NULL or c.end - c.pos < d.minis:
                why[0] = "truncated DELTA_BINARY_PACKED block"
                return -1
            d.min_delta = <uint32_t>v
            d.widths_at = c.pos
            d.pos = c.pos + d.minis
            d.mini = 0
        d.width = d.s[d.widths_at + d.mini]
        if d.width > 32 or d.end - d.pos < d.per_mini * d.width // 8:
            why[0] = "truncated DELTA_BINARY_PACKED miniblock"
            return -1
        d.mini_at = d.pos
        d.pos += d.per_mini * d.width // 8
        d.mini += 1
        d.mini_left, d.mini_index = d.per_mini, 0
    d.last += d.min_delta + bits_at(d.s, d.mini_at, d.pos, d.mini_index * d.width, d.width, &ok)
    d.mini_index += 1
    d.mini_left -= 1
    if not ok:
        why[0] = "truncated DELTA_BINARY_PACKED miniblock"
        return -1
    out[0] = d.last
    return 0


# ---- a column chunk's pages -------------------------------------------------------------------------------

cdef class ColumnChunk:
    """The pages of one column chunk of a top-level BYTE_ARRAY column (its bytes: `data`, from file offset
    `base`), decoded a batch of documents at a time by read()."""
    cdef object keep                    # data, held while its bytes are read
    cdef const uint8_t* s
    cdef Py_ssize_t n
    cdef Py_ssize_t pos                 # the next page header
    cdef int64_t base
    cdef int codec
    cdef bint optional
    cdef int64_t values_left            # values of the chunk in pages not yet begun
    cdef bint data_seen
    cdef bint has_dict
    cdef vector[uint8_t] dict_data      # the dictionary's values end to end, value i at dict_off[i:i + 2]
    cdef vector[int64_t] dict_off
    cdef vector[uint8_t] page_buf       # a compressed page decompressed
    cdef const uint8_t* v               # the current page's values
    cdef Py_ssize_t v_n
    cdef Py_ssize_t v_pos
    cdef int64_t page_left              # rows left in the current page
    cdef int encoding
    cdef Hybrid defs
    cdef Hybrid indices
    cdef Delta lengths
    cdef int64_t page_at                # the current page's header's offset in the file (for errors)
    cdef const char* error
    cdef vector[uint8_t] out
    cdef vector[int64_t] bounds

    def __cinit__(self, const uint8_t[::1] data not None, int64_t base, int codec, bint optional,
                  int64_t num_values):
        if codec not in SUPPORTED_CODECS:
            raise ValueError(f"codec {codec} is not read natively")
        if num_values < 0:
            raise ValueError("negative num_values")
        self.keep = data
        self.n = data.shape[0]
        self.s = &data[0] if self.n else NULL
        self.base, self.codec, self.optional, self.values_left = base, codec, optional, num_values
        self.pos = 0
        self.page_at = base
        self.page_left = 0

    def read(self, int64_t max_bytes, int64_t max_rows):
        """The next documents (a null: an empty one) as (bytes, int64 bounds from 0): at least one, and until
        their bytes reach max_bytes or they are max_rows; None when the chunk's values are all read. ValueError
        naming the byte offset of the page reached when the bytes are not Parquet."""
        cdef int status
        cdef Py_ssize_t rows
        cdef int64_t[::1] view
        if max_rows < 1:
            raise ValueError("max_rows must be 1 or more")
        self.out.clear()
        self.bounds.clear()
        push_or_end(self.bounds, <int64_t>0)
        with nogil:
            status = self._fill(max_bytes, max_rows)
        if status < 0:
            raise ValueError(f"{self.error.decode()} (page at byte {self.page_at})")
        rows = self.bounds.size() - 1
        if rows == 0:
            return None
        data = PyBytes_FromStringAndSize(<const char*>self.out.data(), self.out.size())
        bounds = np.empty(rows + 1, dtype=np.int64)
        view = bounds
        memcpy(&view[0], self.bounds.data(), (rows + 1) * sizeof(int64_t))
        return data, bounds

    cdef int _fill(self, int64_t max_bytes, int64_t max_rows) noexcept nogil:
        cdef int64_t rows = 0
        cdef uint32_t level, index, length
        cdef const uint8_t* p
        cdef const char* why = NULL
        while rows < max_rows and (rows == 0 or <int64_t>self.out.size() < max_bytes):
            if self.page_left == 0:
                if self.values_left == 0:
                    return 0
                if self._next_page() < 0:
                    return -1
                continue
            self.page_left -= 1
            rows += 1
            if self.optional:
                if hybrid_next(&self.defs, &level, &why) < 0:
                    return self._fail(why)
                if level > 1:
                    return self._fail("definition level over 1")
                if level == 0:
                    push_or_end(self.bounds, <int64_t>self.out.size())
                    continue
            if self.encoding == PLAIN:
                if self.v_n - self.v_pos < 4:
                    return self._fail("PLAIN values end early")
                length = (self.v[self.v_pos] | (<uint32_t>self.v[self.v_pos + 1] << 8)
                          | (<uint32_t>self.v[self.v_pos + 2] << 16) | (<uint32_t>self.v[self.v_pos + 3] << 24))
                self.v_pos += 4
                if length > <uint64_t>(self.v_n - self.v_pos):
                    return self._fail("PLAIN value longer than its page")
                p = self.v + self.v_pos
                self.v_pos += length
            elif self.encoding == DELTA_LENGTH_BYTE_ARRAY:
                if delta_next(&self.lengths, &length, &why) < 0:
                    return self._fail(why)
                if (length >> 31) or length > <uint64_t>(self.v_n - self.v_pos):
                    return self._fail("DELTA_LENGTH_BYTE_ARRAY length out of range")
                p = self.v + self.v_pos
                self.v_pos += length
            else:
                if hybrid_next(&self.indices, &index, &why) < 0:
                    return self._fail(why)
                if index >= self.dict_off.size() - 1:
                    return self._fail("dictionary index out of range")
                p = self.dict_data.data() + self.dict_off[index]
                length = <uint32_t>(self.dict_off[index + 1] - self.dict_off[index])
            append_or_end(self.out, p, p + length)
            push_or_end(self.bounds, <int64_t>self.out.size())
        return 0

    cdef int _fail(self, const char* why) noexcept nogil:
        self.error = why
        return -1

    cdef const uint8_t* _decompress(self, const uint8_t* body, int64_t compressed, int64_t size,
                                    bint compressed_page) noexcept nogil:
        """A page's bytes (compressed: body[:compressed]) as size bytes; NULL (error set) if they are not."""
        cdef const char* why
        if size < 0:
            self.error = "negative page size"
            return NULL
        if self.codec == UNCOMPRESSED or not compressed_page:
            if size != compressed:
                self.error = "uncompressed page's sizes differ"
                return NULL
            return body
        if size > SNAPPY_MAX_RATIO * compressed + 64:
            self.error = "page size beyond what its compressed bytes can hold"
            return NULL
        resize_or_end(self.page_buf, <size_t>size + 1)
        why = snappy(body, <Py_ssize_t>compressed, self.page_buf.data(), <Py_ssize_t>size)
        if why != NULL:
            self.error = why
            return NULL
        return self.page_buf.data()

    cdef int _next_page(self) noexcept nogil:
        """Begins the next data page (decoding a dictionary page before it), or fails (error set)."""
        cdef Cursor c
        cdef int16_t last, inner_last
        cdef int kind, inner
        cdef int64_t page_type, size, compressed, num_values, encoding, level_encoding, def_len, rep_len
        cdef int64_t dict_values, dict_encoding, i, length, width
        cdef bint has_data, has_dict_header, has_v2, compressed_page
        cdef uint32_t seen, inner_seen
        cdef const uint8_t* body
        cdef const uint8_t* region
        cdef Py_ssize_t region_n, at
        while True:
            if self.pos >= self.n:
                return self._fail("the column chunk's pages end before its values")
            self.page_at = self.base + self.pos
            cursor(&c, self.s, self.pos, self.n)
            last = 0
            page_type = size = compressed = num_values = encoding = level_encoding = dict_values = -1
            dict_encoding = -1
            def_len = rep_len = 0
            has_data = has_dict_header = has_v2 = False
            compressed_page = True
            seen = 0
            while next_field(&c, &last, &kind):
                if 0 < last <= 4 and kind != T_I32:
                    skip(&c, kind, 0)           # (a field of another type: skipped, so not there)
                    continue
                if 0 < last < 32:
                    seen |= (<uint32_t>1) << last
                if last == 1:
                    page_type = read_int(&c, kind)
                elif last == 2:
                    size = read_int(&c, kind)
                elif last == 3:
                    compressed = read_int(&c, kind)
                elif (last == 5 or last == 7 or last == 8) and kind == T_STRUCT:
                    if last == 5:
                        has_data = True
                    elif last == 7:
                        has_dict_header = True
                    else:
                        has_v2 = True
                    inner_last = 0
                    inner_seen = 0
                    while next_field(&c, &inner_last, &inner):
                        if 0 < inner_last <= 6 and inner != T_I32:
                            skip(&c, inner, 1)
                            continue
                        if 0 < inner_last < 32:
                            inner_seen |= (<uint32_t>1) << inner_last
                        if inner_last == 1:
                            if last == 7:
                                dict_values = read_int(&c, inner)
                            else:
                                num_values = read_int(&c, inner)
                        elif inner_last == 2 and last == 7:
                            dict_encoding = read_int(&c, inner)
                        elif inner_last == 2 and last == 5:
                            encoding = read_int(&c, inner)
                        elif inner_last == 3 and last == 5:
                            level_encoding = read_int(&c, inner)
                        elif inner_last == 4 and last == 8:
                            encoding = read_int(&c, inner)
                        elif inner_last == 5 and last == 8:
                            def_len = read_int(&c, inner)
                        elif inner_last == 6 and last == 8:
                            rep_len = read_int(&c, inner)
                        elif inner_last == 7 and last == 8 and (inner == T_TRUE or inner == T_FALSE):
                            compressed_page = inner == T_TRUE
                        else:
                            skip(&c, inner, 1)
                    if (last == 5 and (inner_seen & REQUIRED_DATA_PAGE) != REQUIRED_DATA_PAGE
                            or last == 7 and (inner_seen & REQUIRED_DICTIONARY_PAGE) != REQUIRED_DICTIONARY_PAGE
                            or last == 8 and (inner_seen & REQUIRED_DATA_PAGE_V2) != REQUIRED_DATA_PAGE_V2):
                        fail(&c, "page header lacks a required field")
                else:
                    skip(&c, kind, 0)
            if c.error == NULL and (seen & REQUIRED_PAGE) != REQUIRED_PAGE:
                fail(&c, "page header lacks a required field")
            if c.error != NULL:
                return self._fail(c.error)
            if compressed < 0 or compressed > 0x7FFFFFFF or compressed > self.n - c.pos or size < 0 \
                    or size > 0x7FFFFFFF:
                return self._fail("page size out of range")
            body = self.s + c.pos
            self.pos = c.pos + <Py_ssize_t>compressed
            if page_type == INDEX_PAGE:
                continue
            if page_type == DICTIONARY_PAGE:
                if not has_dict_header or dict_values < 0:
                    return self._fail("dictionary page without its header")
                if self.has_dict or self.data_seen:
                    return self._fail("a dictionary page after the first page")
                if dict_encoding != PLAIN and dict_encoding != PLAIN_DICTIONARY:
                    return self._fail("dictionary page not PLAIN")
                region = self._decompress(body, compressed, size, True)
                if region == NULL:
                    return -1
                if dict_values > size // 4:
                    return self._fail("dictionary holds more values than its page")
                self.dict_data.clear()
                self.dict_off.clear()
                push_or_end(self.dict_off, <int64_t>0)
                at = 0
                for i in range(dict_values):
                    if size - at < 4:
                        return self._fail("dictionary values end early")
                    length = (region[at] | (<int64_t>region[at + 1] << 8) | (<int64_t>region[at + 2] << 16)
                              | (<int64_t>region[at + 3] << 24))
                    at += 4
                    if length > size - at:
                        return self._fail("dictionary value longer than its page")
                    append_or_end(self.dict_data, region + at, region + at + length)
                    at += length
                    push_or_end(self.dict_off, <int64_t>self.dict_data.size())
                self.has_dict = True
                continue
            if page_type == DATA_PAGE and has_data:
                if num_values < 0 or num_values > self.values_left:
                    return self._fail("data page holds more values than its column chunk")
                region = self._decompress(body, compressed, size, True)
                if region == NULL:
                    return -1
                region_n = <Py_ssize_t>size
                if self.optional:
                    if level_encoding == RLE:
                        if region_n < 4:
                            return self._fail("truncated definition levels")
                        length = (region[0] | (<int64_t>region[1] << 8) | (<int64_t>region[2] << 16)
                                  | (<int64_t>region[3] << 24))
                        if length > region_n - 4:
                            return self._fail("definition levels longer than their page")
                        hybrid_init(&self.defs, region + 4, <Py_ssize_t>length, 1, False)
                        region += 4 + length
                        region_n -= 4 + length
                    elif level_encoding == BIT_PACKED:
                        length = (num_values + 7) // 8
                        if length > region_n:
                            return self._fail("definition levels longer than their page")
                        hybrid_init(&self.defs, region, <Py_ssize_t>length, 1, True)
                        region += length
                        region_n -= length
                    else:
                        return self._fail("definition levels neither RLE nor BIT_PACKED")
            elif page_type == DATA_PAGE_V2 and has_v2:
                if num_values < 0 or num_values > self.values_left:
                    return self._fail("data page holds more values than its column chunk")
                if def_len < 0 or rep_len < 0 or def_len + rep_len > compressed or def_len + rep_len > size:
                    return self._fail("level lengths out of range")
                if self.optional:
                    hybrid_init(&self.defs, body + rep_len, <Py_ssize_t>def_len, 1, False)
                region = self._decompress(body + rep_len + def_len, compressed - rep_len - def_len,
                                          size - rep_len - def_len, compressed_page)
                if region == NULL:
                    return -1
                region_n = <Py_ssize_t>(size - rep_len - def_len)
            else:
                return self._fail("page of an unknown type, or without its header")
            self.v, self.v_n, self.v_pos = region, region_n, 0
            self.encoding = <int>encoding
            if encoding == PLAIN_DICTIONARY or encoding == RLE_DICTIONARY:
                if not self.has_dict:
                    return self._fail("dictionary indices without a dictionary page")
                width = region[0] if region_n else 0
                if width > 32:
                    return self._fail("dictionary index bit width over 32")
                hybrid_init(&self.indices, region + 1, region_n - 1 if region_n else 0, <int>width, False)
            elif encoding == DELTA_LENGTH_BYTE_ARRAY:
                c.error = delta_init(&self.lengths, region, region_n, num_values, &at)
                if c.error != NULL:
                    return self._fail(c.error)
                self.v_pos = at
            elif encoding != PLAIN:
                return self._fail("a value encoding not read natively (not in the column's encodings)")
            self.page_left = num_values
            self.values_left -= num_values
            self.data_seen = True
            return 0
