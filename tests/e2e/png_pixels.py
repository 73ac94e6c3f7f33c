#!/usr/bin/env python3
"""Counts the pixels of a PNG near given colours, with the standard library only (no PIL on a
fresh Debian): for the report PDF's pages (report_pdf_test.sh) and the dashboard's screenshots
(scripts/dashboard-screenshots.sh), which must show figures, not a blank page.

    png_pixels.py FILE [--from-row N] [NAME=#rrggbb ...]

prints JSON: {"width", "height", "non_white", "colours": {NAME: count}}, counting the rows from
N on (default 0: a page's fixed header can be left out). A pixel counts for a
colour when every channel is within 48 of it (anti-aliased edges and print colour management
move colours a little); non_white: any channel under 240. Reads 8-bit greyscale, RGB, palette
(1-8 bit) and their alpha forms, not interlaced: what pdftoppm, Chromium and pngquant write.
"""
import json
import struct
import sys
import zlib

TOLERANCE = 48


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, palette = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = [tuple(body[i:i + 3]) for i in range(0, len(body), 3)]
        elif kind == b"IDAT":
            idat += body
    if interlace or (depth != 8 and ctype != 3):
        raise SystemExit(f"{path}: depth {depth}, colour type {ctype}, interlace {interlace}: not read")
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    bits = depth * channels
    stride = (width * bits + 7) // 8
    step = max(1, bits // 8)  # bytes to the same channel of the pixel to the left
    raw = zlib.decompress(idat)
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up = prev[i]
            corner = prev[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + paeth(left, up, corner)) & 0xFF
        rows.append(line)
        prev = line
    pixels = []
    for line in rows:
        if ctype == 3:
            per_byte = 8 // depth
            for x in range(width):
                byte = line[x // per_byte]
                shift = 8 - depth * (x % per_byte + 1)
                pixels.append(palette[(byte >> shift) & ((1 << depth) - 1)])
        else:
            for x in range(width):
                px = line[x * channels:(x + 1) * channels]
                pixels.append((px[0], px[0], px[0]) if ctype in (0, 4) else tuple(px[:3]))
    return width, height, pixels


def main():
    path, wanted, first_row = sys.argv[1], {}, 0
    args = sys.argv[2:]
    if args[:1] == ["--from-row"]:
        first_row, args = int(args[1]), args[2:]
    for arg in args:
        name, colour = arg.split("=", 1)
        wanted[name] = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    width, height, pixels = read_png(path)
    counts = dict.fromkeys(wanted, 0)
    non_white = 0
    for px in pixels[first_row * width:]:
        if min(px) < 240:
            non_white += 1
            for name, rgb in wanted.items():
                if all(abs(a - b) <= TOLERANCE for a, b in zip(px, rgb)):
                    counts[name] += 1
    print(json.dumps({"width": width, "height": height, "non_white": non_white, "colours": counts}))


if __name__ == "__main__":
    main()
