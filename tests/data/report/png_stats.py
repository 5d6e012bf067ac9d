#!/usr/bin/python3
"""Checks that a screenshot of the report shows a real chart, not a blank
or broken page:

    png_stats.py FILE

The PNG (8-bit RGB or RGBA, not interlaced: what Chromium writes) is read
with PIL when it is installed, else with zlib and numpy alone. Prints the
size, the share of non-white pixels and the number of distinct colours of
the page; then finds the first chart's plot area (the frame: the first two
long horizontal grey lines) and prints the same for it, and whether the
colours at both ends of the temperature scale are drawn inside it. Exits 1
when any of these looks wrong."""
import struct
import sys
import zlib

import numpy as np


def read_png(path):
    try:
        from PIL import Image
        return np.asarray(Image.open(path).convert("RGB"))
    except ImportError:
        pass
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG file")
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise SystemExit(f"{path}: unsupported PNG (depth {depth}, colour type {ctype}, interlace {interlace})")
    bpp = 3 if ctype == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(h, 1 + w * bpp)
    out = np.zeros((h, w * bpp), dtype=np.uint8)
    prev = np.zeros(w * bpp, dtype=np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 1:  # Sub: a running sum along each channel
            cur = np.cumsum(line.reshape(w, bpp), axis=0).reshape(-1) & 255
        elif f == 2:  # Up
            cur = (line + prev) & 255
        else:  # Average, Paeth: each byte needs the one decoded before it
            cur = np.zeros_like(line)
            lst, pv = line.tolist(), prev.tolist()
            c = [0] * len(lst)
            for i, x in enumerate(lst):
                a = c[i - bpp] if i >= bpp else 0
                b = pv[i]
                if f == 3:
                    c[i] = (x + ((a + b) >> 1)) & 255
                else:
                    cc = pv[i - bpp] if i >= bpp else 0
                    p = a + b - cc
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
                    c[i] = (x + (a if pa <= pb and pa <= pc else b if pb <= pc else cc)) & 255
            cur = np.array(c, dtype=np.int32)
        out[y] = cur
        prev = cur
    return out.reshape(h, w, bpp)[:, :, :3]


def has(flat, rgb, tol=12):
    return bool(np.any(np.abs(flat - np.array(rgb)).max(axis=1) <= tol))


def stats(img):
    flat = img.reshape(-1, 3).astype(np.int32)
    non_white = float(np.mean(flat.min(axis=1) < 240))
    colours = len(np.unique(flat[:, 0] * 65536 + flat[:, 1] * 256 + flat[:, 2]))
    return flat, non_white, colours


def longest_grey_run(row):
    """(length, start) of the longest run of one grey darker than the grid."""
    grey = (row[:, 0] == row[:, 1]) & (row[:, 1] == row[:, 2]) & (row[:, 0] < 200)
    best, start, run = (0, 0), 0, 0
    for x, g in enumerate(np.append(grey, False)):
        if g:
            if not run:
                start = x
            run += 1
        else:
            if run > best[0]:
                best = (run, start)
            run = 0
    return best


img = read_png(sys.argv[1])
h, w, _ = img.shape
flat, non_white, colours = stats(img)
print(f"page: {w}x{h}, non-white {non_white:.3f}, colours {colours}")
ok = 0.02 < non_white < 0.8 and colours >= 64

# the chart's frame: rows with a grey line at least a third of the page wide
lines = []
for y in range(h):
    n, x0 = longest_grey_run(img[y].astype(np.int32))
    if n >= w // 3 and (not lines or y > lines[-1][0] + 5):
        lines.append((y, x0, x0 + n))
if len(lines) < 2:
    print("no chart frame found")
    sys.exit(1)
(top, x0, x1), (bottom, _, _) = lines[0], lines[1]
area = img[top + 3:bottom - 2, x0 + 3:x1 - 3]
aflat, a_non_white, a_colours = stats(area)
cold, hot = has(aflat, (0x31, 0x36, 0x95)), has(aflat, (0xa5, 0x00, 0x26))
print(f"plot area: {x1 - x0}x{bottom - top} at ({x0}, {top}), non-white {a_non_white:.3f}, colours {a_colours}, "
      f"coldest colour {cold}, hottest colour {hot}")
ok = ok and bottom - top > 200 and 0.003 < a_non_white < 0.5 and a_colours >= 20 and cold and hot
sys.exit(0 if ok else 1)
