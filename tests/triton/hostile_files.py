"""Image files for the hostile-input suite (test_hostile.py), made at test
time: JPEGs with scan scripts of our choosing, written here marker by
marker (no encoder at hand lets one choose the scans), and PNGs of zeros
written without holding their pixels."""

import struct
import zlib

import numpy as np

from tests.triton.helpers import encoded, synthetic_jpeg, synthetic_rgb

# ZIGZAG[k] is the natural (row-major) index of the k-th coefficient in
# zigzag order.
ZIGZAG = np.array(
    [0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21,
     28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61,
     54, 47, 55, 62, 63]
)  # fmt: skip

SOI, EOI = b"\xff\xd8", b"\xff\xd9"


def segment(marker, payload):
    return struct.pack(">BBH", 0xFF, marker, len(payload) + 2) + payload


class Bits:
    """An entropy-coded segment: bits MSB first, 0xFF bytes stuffed."""

    def __init__(self):
        self.out = bytearray()
        self.acc = self.n = 0

    def put(self, value, length):
        self.acc = (self.acc << length) | value
        self.n += length
        while self.n >= 8:
            self.n -= 8
            b = (self.acc >> self.n) & 0xFF
            self.out.append(b)
            if b == 0xFF:
                self.out.append(0)
        self.acc &= (1 << self.n) - 1

    def done(self):
        if self.n:
            self.put((1 << (8 - self.n)) - 1, 8 - self.n)  # pad with ones
        return bytes(self.out)


class Huffman:
    """A table giving every symbol a code of one length: canonical by
    construction (code = position), and enough for files made to measure."""

    def __init__(self, cls, symbols, length):
        assert len(symbols) < 1 << length  # the all-ones code is reserved
        self.code = {s: i for i, s in enumerate(symbols)}
        self.length = length
        counts = [0] * 16
        counts[length - 1] = len(symbols)
        self.dht = segment(0xC4, bytes([cls << 4, *counts, *symbols]))  # table 0 of its class

    def put(self, bits, symbol, extra=0, nextra=0):
        bits.put(self.code[symbol], self.length)
        bits.put(extra, nextra)


def magnitude(v):
    """JPEG's (category, extra bits) for a coefficient or DC difference."""
    cat = abs(v).bit_length()
    return cat, (v if v >= 0 else v + (1 << cat) - 1)


def frame(w, h, comps, q=1):
    """SOI, one quantisation table (all q) and a progressive SOF; comps:
    (id, h sampling, v sampling)."""
    sof = struct.pack(">BHHB", 8, h, w, len(comps)) + b"".join(bytes([c, hs << 4 | vs, 0]) for c, hs, vs in comps)
    return SOI + segment(0xDB, bytes([0] + [q] * 64)) + segment(0xC2, sof)


def sos(ids, ss, se, ah, al):
    """A scan header; every component uses tables 0."""
    return segment(0xDA, bytes([len(ids)] + [x for c in ids for x in (c, 0)] + [ss, se, ah << 4 | al]))


def jpeg_many_scans(scans, size=8192):
    """A legal progressive 4:2:0 JPEG of size x size mid-grey pixels with
    `scans` scans: one DC scan (every coefficient 0, one bit a block), then
    AC scans of whole components, each a few end-of-band runs. Small (about
    200 kB at 8192), yet each scan is a pass over up to a million blocks
    for the decoder."""
    assert size % 16 == 0
    dc = Huffman(0, [0], 1)
    ac = Huffman(1, [r << 4 for r in range(15)], 4)  # EOBRUN symbols
    out = [frame(size, size, [(1, 2, 2), (2, 1, 1), (3, 1, 1)]), dc.dht, ac.dht]
    mcus = (size // 16) ** 2
    out += [sos([1, 2, 3], 0, 0, 0, 0), bytes(mcus * 6 // 8)]  # DC difference 0: code "0"
    blocks = {1: mcus * 4, 2: mcus, 3: mcus}
    for k in range(scans - 1):
        c = 1 + k % 3
        bits = Bits()
        left = blocks[c]
        while left:
            run = min(left, 32767)
            r = run.bit_length() - 1
            ac.put(bits, r << 4, run - (1 << r), r)
            left -= run
        out += [sos([c], 1, 63, 0, 0), bits.done()]
    return b"".join(out) + EOI


def _fdct_matrix():
    u, x = np.mgrid[0:8, 0:8]
    c = np.cos((2 * x + 1) * u * np.pi / 16) / 2
    c[0] /= np.sqrt(2)
    return c


def jpeg_uncoded_ac(rgb, keep=5, q=4):
    """A legal progressive 4:4:4 JPEG of rgb (sides multiples of 8) whose
    scan script never codes most AC coefficients, which the standard
    allows: DC of all components in two successive-approximation scans,
    then the luma's AC 1..keep; every other coefficient stays zero."""
    h, w, _ = rgb.shape
    assert h % 8 == 0 and w % 8 == 0
    x = rgb.astype(np.float64)
    ycc = np.stack(
        [
            0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2],
            -0.168736 * x[..., 0] - 0.331264 * x[..., 1] + 0.5 * x[..., 2] + 128,
            0.5 * x[..., 0] - 0.418688 * x[..., 1] - 0.081312 * x[..., 2] + 128,
        ]
    )
    m = _fdct_matrix()
    # [component, block row, block column, 64 zigzag coefficients]
    blocks = (ycc - 128).reshape(3, h // 8, 8, w // 8, 8).transpose(0, 1, 3, 2, 4)
    coef = np.rint(np.einsum("ux,cijxy,vy->cijuv", m, blocks, m) / q).astype(int)
    coef = coef.reshape(3, h // 8, w // 8, 64)[..., ZIGZAG]

    dc = Huffman(0, list(range(12)), 4)
    ac = Huffman(1, [0x00, 0xF0] + [r << 4 | s for r in range(16) for s in range(1, 11)], 8)
    out = [frame(w, h, [(1, 1, 1), (2, 1, 1), (3, 1, 1)], q), dc.dht, ac.dht]
    order = [(i, j) for i in range(h // 8) for j in range(w // 8)]  # MCU = one block of each component

    bits, pred = Bits(), [0, 0, 0]
    for i, j in order:
        for c in range(3):
            v = coef[c, i, j, 0] >> 1  # point transform Al = 1
            cat, extra = magnitude(int(v - pred[c]))
            pred[c] = v
            dc.put(bits, cat, extra, cat)
    out += [sos([1, 2, 3], 0, 0, 0, 1), bits.done()]

    bits = Bits()
    for i, j in order:
        for c in range(3):
            bits.put(int(coef[c, i, j, 0]) & 1, 1)  # the refinement bit
    out += [sos([1, 2, 3], 0, 0, 1, 0), bits.done()]

    bits = Bits()
    for i, j in order:
        run = 0
        for v in coef[0, i, j, 1 : keep + 1]:
            if v == 0:
                run += 1
                continue
            while run > 15:
                ac.put(bits, 0xF0)
                run -= 16
            cat, extra = magnitude(int(v))
            ac.put(bits, run << 4 | cat, extra, cat)
            run = 0
        if run:
            ac.put(bits, 0x00)  # end of band, a run of one block
    out += [sos([1], 1, keep, 0, 0), bits.done()]
    return b"".join(out) + EOI


# ------------------------------------------------------------------ PNG


def png_chunk(typ, data):
    return struct.pack(">I", len(data)) + typ + data + struct.pack(">I", zlib.crc32(typ + data))


def zlib_zeros(n, block=1 << 20):
    """A zlib stream of n zero bytes, made without compressing n bytes:
    after a full flush deflate starts afresh, so each megabyte of zeros
    compresses to the same bytes, repeated here."""
    c = zlib.compressobj(9)
    head = c.compress(b"") + c.flush(zlib.Z_SYNC_FLUSH)  # the 2-byte zlib header (and an empty block)
    one = c.compress(bytes(block)) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(bytes(block)) + c.flush(zlib.Z_FULL_FLUSH)
    assert one == again
    full, rest = divmod(n, block)
    tail = c.compress(bytes(rest)) + c.flush(zlib.Z_FULL_FLUSH) if rest else b""
    # Adler-32 of n zeros: a stays 1, b grows by 1 a byte.
    adler = (n % 65521) << 16 | 1
    return head + one * full + tail + b"\x03\x00" + struct.pack(">I", adler)  # final empty block, checksum


def png_zeros(w, h, colour_type=2, idat_bytes=None):
    """A w x h 8-bit PNG of zeros (colour type 2: RGB, 0: grey). idat_bytes
    sets how many bytes the image data inflates to (default: exactly what
    the header needs)."""
    channels = {0: 1, 2: 3}[colour_type]
    need = h * (1 + w * channels)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)
    idat = zlib_zeros(need if idat_bytes is None else idat_bytes)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")


def jpeg_claiming(w, h):
    """A small valid JPEG whose SOF header is rewritten to claim w x h."""
    b = bytearray(synthetic_jpeg(64, 48).tobytes())
    for marker in (b"\xff\xc0", b"\xff\xc2", b"\xff\xc1"):
        i = b.find(marker)
        if i >= 0:
            break
    assert i >= 0, "no SOF marker"
    # FF Cn, length (2), precision (1), height (2), width (2)
    assert struct.unpack(">HH", b[i + 5 : i + 9]) == (48, 64)
    b[i + 5 : i + 9] = struct.pack(">HH", h, w)
    return np.frombuffer(bytes(b), dtype=np.uint8)


def png_claiming(w, h):
    """A small valid PNG whose IHDR claims w x h (CRC fixed, so only the size lies)."""
    b = bytearray(encoded(synthetic_rgb(np.random.default_rng(2), 24, 32), "PNG").tobytes())
    assert b[12:16] == b"IHDR"
    b[16:24] = struct.pack(">II", w, h)
    b[29:33] = struct.pack(">I", zlib.crc32(bytes(b[12:29])))
    return np.frombuffer(bytes(b), dtype=np.uint8)
