"""BMP and PNM files of every variant the decoders read, made from a corpus
photo: with Pillow where Pillow writes the variant, else with the small
writers here (they follow the format specifications, and Pillow reads every
file they make: it is the reference). Shared by the accuracy tests and
tests/triton."""

import struct

import numpy as np
from PIL import Image, ImageOps

PHOTO = "jpeg/derived/lom-bridge_full_512x384_b420q75.jpg"
ALPHA_PHOTO = "png/derived_skimage-chelsea_451x300_rgba.png"
# Odd sizes: rows need padding in every bit depth.
H, W = 61, 97


def photo(corpus, h=H, w=W):
    """An h×w RGB crop of a corpus photo, with detail and smooth parts."""
    im = Image.open(corpus / PHOTO).convert("RGB")
    return im.crop((150, 120, 150 + w, 120 + h))


def alpha_photo(corpus, h=H, w=W):
    """An h×w RGBA crop whose alpha varies (the corpus PNG's alpha is
    opaque in places; a gradient makes every level appear)."""
    im = Image.open(corpus / ALPHA_PHOTO).convert("RGBA").crop((100, 80, 100 + w, 80 + h))
    a = np.asarray(im).copy()
    a[:, :, 3] = (np.arange(w)[None, :] * 255 // (w - 1)).astype(np.uint8)
    return Image.fromarray(a, "RGBA")


# ------------------------------------------------------------------ BMP


def bmp_file(w, h, bits, pixels, compression=0, palette=b"", masks=b"", header=40, top_down=False, colors=0):
    """A BMP: file header, an info header of `header` bytes (masks inside it
    from 52 bytes on), masks after a 40-byte one, palette, pixel array."""
    if header == 12:
        info = struct.pack("<IHHHH", 12, w, h, 1, bits)
    else:
        info = struct.pack(
            "<IiiHHIIiiII", header, w, -h if top_down else h, 1, bits, compression, len(pixels), 2835, 2835, colors, 0
        )
        if header > 40:
            info += masks.ljust(header - 40, b"\0")[: header - 40]
            masks = b""
    off = 14 + len(info) + len(masks) + len(palette)
    return b"BM" + struct.pack("<IHHI", off + len(pixels), 0, 0, off) + info + masks + palette + pixels


def bmp_rows(rows, top_down=False):
    """Row byte strings padded to 4 bytes, in stored order."""
    rows = [r + b"\0" * (-len(r) % 4) for r in rows]
    return b"".join(rows if top_down else rows[::-1])


def pack_indices(idx, bits):
    """One row of palette indices packed msb-first."""
    per = 8 // bits
    out = bytearray((len(idx) + per - 1) // per)
    for x, v in enumerate(idx):
        out[x // per] |= int(v) << (8 - bits * (x % per + 1))
    return bytes(out)


def bgrx_palette(pal_rgb, entry=4):
    return b"".join(bytes([b, g, r]) + b"\0" * (entry - 3) for r, g, b in pal_rgb)


def quantized(im, colors):
    p = im.quantize(colors)
    pal = p.getpalette()[: 3 * colors]
    pal += [0] * (3 * colors - len(pal))
    return np.asarray(p), [tuple(pal[3 * i : 3 * i + 3]) for i in range(colors)]


def rle_encode(idx, rle4):
    """RLE8/RLE4 of rows of indices (stored bottom-up): runs of equal
    pixels, literal runs for the rest (padded to 16 bits), end of line after
    every row, end of bitmap."""
    out = bytearray()
    for row in idx[::-1]:
        row = [int(v) for v in row]
        x, w = 0, len(row)
        while x < w:
            n = 1
            while x + n < w and n < 255 and row[x + n] == row[x]:
                n += 1
            if n >= 3 or w - x < 3:
                out += bytes([n, row[x] << 4 | row[x] if rle4 else row[x]])
                x += n
                continue
            m = 3  # a literal run, up to the next run of 3
            while x + m < w and m < 255 and not (x + m + 2 < w and row[x + m] == row[x + m + 1] == row[x + m + 2]):
                m += 1
            data = pack_indices(row[x : x + m], 4) if rle4 else bytes(row[x : x + m])
            out += bytes([0, m]) + data + b"\0" * (len(data) % 2)
            x += m
        out += b"\0\0"
    out[-2:] = b"\0\1"
    return bytes(out)


def bmp_variants(corpus, folder):
    """{name: path} of BMP files, every variant the decoder reads."""
    im, rgba = photo(corpus), alpha_photo(corpus)
    rgb = np.asarray(im)
    w, h = im.size
    files = {}

    def save(name, data):
        p = folder / f"{name}.bmp"
        p.write_bytes(data)
        files[name] = p

    # Written by Pillow.
    for name, src in [("pil_rgb24", im), ("pil_p8", im.quantize(256)), ("pil_l8", im.convert("L")),
                      ("pil_1bit", im.convert("1")), ("pil_rgba32", rgba)]:  # fmt: skip
        p = folder / f"{name}.bmp"
        src.save(p, "BMP")
        files[name] = p

    # Palettes of 2, 4 (2-bit is not read by Pillow: not written), 16 and 256 colours.
    for bits, colors in [(1, 2), (4, 16), (8, 256)]:
        idx, pal = quantized(im, colors)
        rows = [pack_indices(r, bits) for r in idx]
        save(f"pal{bits}", bmp_file(w, h, bits, bmp_rows(rows), palette=bgrx_palette(pal)))
        if bits == 8:
            save("pal8_topdown", bmp_file(w, h, 8, bmp_rows(rows, True), palette=bgrx_palette(pal), top_down=True))
            save("pal8_os2", bmp_file(w, h, 8, bmp_rows(rows), palette=bgrx_palette(pal, 3), header=12))
            save("pal8_short", bmp_file(w, h, 8, bmp_rows(rows), palette=bgrx_palette(pal[:200]), colors=200))
            save("rle8", bmp_file(w, h, 8, rle_encode(idx, False), 1, bgrx_palette(pal)))
        if bits == 4:
            save("rle4", bmp_file(w, h, 4, rle_encode(idx, True), 2, bgrx_palette(pal)))

    r, g, b = (rgb[:, :, i].astype(np.uint32) for i in range(3))
    a = np.asarray(rgba)[:, :, 3].astype(np.uint32)
    ra, ga, ba = (np.asarray(rgba)[:, :, i].astype(np.uint32) for i in range(3))

    def packed(v, nbytes):
        return [b"".join(int(p).to_bytes(nbytes, "little") for p in row) for row in v]

    masks565 = struct.pack("<III", 0xF800, 0x7E0, 0x1F)
    v555 = (r >> 3) << 10 | (g >> 3) << 5 | b >> 3
    v565 = (r >> 3) << 11 | (g >> 2) << 5 | b >> 3
    save("rgb555", bmp_file(w, h, 16, bmp_rows(packed(v555, 2))))
    save("rgb565_bitfields", bmp_file(w, h, 16, bmp_rows(packed(v565, 2)), 3, masks=masks565))
    save("rgb565_v4", bmp_file(w, h, 16, bmp_rows(packed(v565, 2)), 3, masks=masks565, header=108))
    save("bgr24_topdown", bmp_file(w, h, 24, bmp_rows([row[:, ::-1].tobytes() for row in rgb], True), top_down=True))
    save("bgr24_os2", bmp_file(w, h, 24, bmp_rows([row[:, ::-1].tobytes() for row in rgb]), header=12))
    bgrx = ba << 0 | ga << 8 | ra << 16 | a << 24
    save("bgrx32", bmp_file(w, h, 32, bmp_rows(packed(bgrx, 4))))  # BI_RGB: 4th byte ignored
    bgra_masks = struct.pack("<IIII", 0xFF0000, 0xFF00, 0xFF, 0xFF000000)
    save("bgra32_v4", bmp_file(w, h, 32, bmp_rows(packed(bgrx, 4)), 3, masks=bgra_masks, header=108))
    save("bgra32_v5_topdown", bmp_file(w, h, 32, bmp_rows(packed(bgrx, 4), True), 3, masks=bgra_masks, header=124,
                                       top_down=True))  # fmt: skip
    rgba_v = ra | ga << 8 | ba << 16 | a << 24
    rgba_masks = struct.pack("<IIII", 0xFF, 0xFF00, 0xFF0000, 0xFF000000)
    save("rgba32_v5", bmp_file(w, h, 32, bmp_rows(packed(rgba_v, 4)), 3, masks=rgba_masks, header=124))
    xbgr = r << 8 | g << 16 | b << 24
    save("xbgr32_bitfields", bmp_file(w, h, 32, bmp_rows(packed(xbgr, 4)), 3,
                                      masks=struct.pack("<III", 0xFF000000, 0xFF0000, 0xFF00)))  # fmt: skip
    return files


# ------------------------------------------------------------------ PNM


def pnm_file(magic, w, h, maxval, body):
    head = f"{magic}\n# made from a corpus photo\n{w} {h}\n"
    if maxval is not None:
        head += f"{maxval}\n"
    return head.encode() + body


def plain_body(values, per_line=17):
    v = [str(int(x)) for x in np.asarray(values).ravel()]
    return ("\n".join(" ".join(v[i : i + per_line]) for i in range(0, len(v), per_line)) + "\n").encode()


def pnm_variants(corpus, folder):
    """{name: path} of PNM files: Pillow-written raw ones, and plain ones
    and other maxvals written here."""
    im = photo(corpus)
    w, h = im.size
    rgb = np.asarray(im).astype(np.uint32)
    gray = np.asarray(im.convert("L")).astype(np.uint32)
    bw = np.asarray(im.convert("1"))
    files = {}

    def save(name, data, ext):
        p = folder / f"{name}.{ext}"
        p.write_bytes(data)
        files[name] = p

    for name, src, ext in [("pil_p6", im, "ppm"), ("pil_p5", im.convert("L"), "pgm"), ("pil_p4", im.convert("1"), "pbm")]:
        p = folder / f"{name}.{ext}"
        src.save(p)
        files[name] = p
    # 16-bit grey by Pillow: mode I;16 is written as P5 with maxval 65535.
    g16 = (gray * 257 + np.arange(w)[None, :] % 200).astype(np.uint16)
    p = folder / "pil_p5_16.pgm"
    Image.fromarray(g16).save(p)  # mode I;16
    files["pil_p5_16"] = p

    save("p1", pnm_file("P1", w, h, None, plain_body(np.where(bw, 0, 1), 35)), "pbm")
    save("p2", pnm_file("P2", w, h, 255, plain_body(gray)), "pgm")
    save("p3", pnm_file("P3", w, h, 255, plain_body(rgb)), "ppm")
    for maxval in (1, 15, 100, 1000, 4095, 65535):
        g = (gray * maxval + 127) // 255
        c = (rgb * maxval + 127) // 255
        nbytes = 1 if maxval < 256 else 2
        dt = ">u2" if nbytes == 2 else "u1"
        save(f"p5_max{maxval}", pnm_file("P5", w, h, maxval, g.astype(dt).tobytes()), "pgm")
        save(f"p6_max{maxval}", pnm_file("P6", w, h, maxval, c.astype(dt).tobytes()), "ppm")
        if maxval in (15, 1000, 65535):
            save(f"p2_max{maxval}", pnm_file("P2", w, h, maxval, plain_body(g)), "pgm")
            save(f"p3_max{maxval}", pnm_file("P3", w, h, maxval, plain_body(c)), "ppm")
    return files


# ------------------------------------------------------------------ reference


def high_byte(im):
    """A 16-bit grey image ("I", "I;16", "I;16B") as its high bytes, as the
    decoders keep it; None for any other mode."""
    if im.mode in ("I", "I;16", "I;16B"):
        return (np.asarray(im).astype(np.uint32) >> 8).astype(np.uint8)
    return None


def pillow_pixels(path, color, orient=False):
    """Pillow's decode of path in the pipeline's colour, EXIF orientation
    applied when orient: "I" (16-bit grey) keeps the high byte, as the
    decoders do; grey is convert("L")."""
    im = Image.open(path)
    if orient:
        im = ImageOps.exif_transpose(im)
    if (g := high_byte(im)) is not None:
        return {"GRAY": g[:, :, None], "RGB": np.repeat(g[:, :, None], 3, 2), "BGR": np.repeat(g[:, :, None], 3, 2),
                "RGBA": np.dstack([g, g, g, np.full_like(g, 255)]),
                "BGRA": np.dstack([g, g, g, np.full_like(g, 255)])}[color]  # fmt: skip
    if color == "GRAY":
        return np.asarray(im.convert("L"))[:, :, None]
    if color in ("RGB", "BGR"):
        a = np.asarray(im.convert("RGB"))
    else:
        a = np.asarray(im.convert("RGBA"))
    return a[:, :, [2, 1, 0, 3][: a.shape[2]]] if color.startswith("BGR") else a


# ------------------------------------------------------------------ tiled TIFF


def tiled_tiff(im, tile=16, deflate=False):
    """im (RGB) as a little-endian tiled TIFF, uncompressed or Deflate
    (zlib): Pillow 13 does not write tiles, but reads them."""
    import zlib

    a = np.asarray(im.convert("RGB"))
    h, w = a.shape[:2]
    tiles = []
    for ty in range(0, h, tile):
        for tx in range(0, w, tile):
            t = np.zeros((tile, tile, 3), np.uint8)  # edge tiles are padded
            part = a[ty : ty + tile, tx : tx + tile]
            t[: part.shape[0], : part.shape[1]] = part
            tiles.append(zlib.compress(t.tobytes()) if deflate else t.tobytes())
    n = len(tiles)
    entries = 10
    ifd_at = 8
    extra_at = ifd_at + 2 + 12 * entries + 4  # arrays after the IFD
    bps_at = extra_at
    offsets_at = bps_at + 6
    counts_at = offsets_at + 4 * n
    data_at = counts_at + 4 * n
    offsets, pos = [], data_at
    for t in tiles:
        offsets.append(pos)
        pos += len(t)

    def entry(tag, typ, count, value):
        return struct.pack("<HHI", tag, typ, count) + (
            struct.pack("<HH", value, 0) if typ == 3 and count == 1 else struct.pack("<I", value)
        )

    ifd = struct.pack("<H", entries) + b"".join(
        [
            entry(256, 4, 1, w),
            entry(257, 4, 1, h),
            entry(258, 3, 3, bps_at),
            entry(259, 3, 1, 8 if deflate else 1),
            entry(262, 3, 1, 2),
            entry(277, 3, 1, 3),
            entry(322, 3, 1, tile),
            entry(323, 3, 1, tile),
            entry(324, 4, n, offsets_at) if n > 1 else entry(324, 4, 1, offsets[0]),
            entry(325, 4, n, counts_at) if n > 1 else entry(325, 4, 1, len(tiles[0])),
        ]
    ) + struct.pack("<I", 0)
    body = struct.pack("<HHH", 8, 8, 8) + struct.pack(f"<{n}I", *offsets) + struct.pack(f"<{n}I", *map(len, tiles))
    return b"II*\0" + struct.pack("<I", ifd_at) + ifd + body + b"".join(tiles)


# ------------------------------------------------------------------ the ImageNet pipeline over Pillow


MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def imagenet_crop(rgb):
    """preprocess_imagenet's resize (shorter side 256, bilinear, Pillow's
    antialiasing) and centre crop 224 of an RGB uint8 array, with Pillow."""
    h, w = rgb.shape[:2]
    if w <= h:
        nw, nh = 256, int(256 * h / w)
    else:
        nh, nw = 256, int(256 * w / h)
    r = np.asarray(Image.fromarray(rgb).resize((nw, nh), Image.BILINEAR))
    top, left = int(round((nh - 224) / 2.0)), int(round((nw - 224) / 2.0))
    return r[top : top + 224, left : left + 224]


def pixels_of_tensor(t):
    """The uint8 HWC image a normalized CHW float32 tensor came from."""
    return np.rint((t * STD[:, None, None] + MEAN[:, None, None]) * 255).transpose(1, 2, 0)
