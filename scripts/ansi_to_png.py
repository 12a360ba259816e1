#!/usr/bin/env python3
"""Renders a terminal screen captured with `tmux capture-pane -p -e` (text with SGR colour
escapes) into a PNG, cell by cell, with DejaVu Sans Mono.

    python3 scripts/ansi_to_png.py screen.ansi out.png [columns rows]
"""
import re
import sys

from PIL import Image, ImageDraw, ImageFont

FONT_DIR = "/usr/share/fonts/truetype/dejavu/"
PALETTE = {  # xterm-like colours on a dark background
    0: (40, 42, 54), 1: (255, 92, 87), 2: (90, 247, 142), 3: (243, 249, 157),
    4: (87, 199, 255), 5: (255, 106, 193), 6: (154, 237, 254), 7: (241, 241, 240),
}
BACKGROUND = (30, 31, 41)
FOREGROUND = (226, 226, 220)
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def parse(text, columns, rows):
    """Yields (x, y, char, fg, bg, bold, dim) for every cell."""
    grid = []
    for y, line in enumerate(text.split("\n")[:rows]):
        state = {"fg": None, "bg": None, "bold": False, "dim": False, "reverse": False}
        x = 0
        position = 0
        while position < len(line) and x < columns:
            match = SGR.match(line, position)
            if match:
                codes = [int(c) for c in match.group(1).split(";") if c] or [0]
                i = 0
                while i < len(codes):
                    code = codes[i]
                    if code == 0:
                        state = {"fg": None, "bg": None, "bold": False, "dim": False, "reverse": False}
                    elif code == 1:
                        state["bold"] = True
                    elif code == 2:
                        state["dim"] = True
                    elif code == 7:
                        state["reverse"] = True
                    elif code == 22:
                        state["bold"] = state["dim"] = False
                    elif code == 27:
                        state["reverse"] = False
                    elif 30 <= code <= 37:
                        state["fg"] = PALETTE[code - 30]
                    elif code == 39:
                        state["fg"] = None
                    elif 40 <= code <= 47:
                        state["bg"] = PALETTE[code - 40]
                    elif code == 49:
                        state["bg"] = None
                    elif 90 <= code <= 97:
                        state["fg"] = PALETTE[code - 90]
                    elif code in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                        colour = PALETTE.get(codes[i + 2] % 8)
                        state["fg" if code == 38 else "bg"] = colour
                        i += 2
                    i += 1
                position = match.end()
                continue
            char = line[position]
            position += 1
            fg = state["fg"] or FOREGROUND
            bg = state["bg"] or BACKGROUND
            if state["reverse"]:
                fg, bg = bg, fg
            if state["dim"]:
                fg = tuple(int(c * 0.6 + b * 0.4) for c, b in zip(fg, bg))
            grid.append((x, y, char, fg, bg, state["bold"]))
            x += 1
    return grid


def main():
    source, target = sys.argv[1], sys.argv[2]
    columns = int(sys.argv[3]) if len(sys.argv) > 3 else 120
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 36
    text = open(source, encoding="utf-8").read()
    size = 15
    regular = ImageFont.truetype(FONT_DIR + "DejaVuSansMono.ttf", size)
    bold = ImageFont.truetype(FONT_DIR + "DejaVuSansMono-Bold.ttf", size)
    cell_w = round(regular.getlength("M"))
    cell_h = size + 5
    image = Image.new("RGB", (columns * cell_w + 16, rows * cell_h + 16), BACKGROUND)
    draw = ImageDraw.Draw(image)
    for x, y, char, fg, bg, is_bold in parse(text, columns, rows):
        left, top = 8 + x * cell_w, 8 + y * cell_h
        if bg != BACKGROUND:
            draw.rectangle([left, top, left + cell_w - 1, top + cell_h - 1], fill=bg)
        if char != " ":
            draw.text((left, top + 2), char, font=bold if is_bold else regular, fill=fg)
    image.save(target)


if __name__ == "__main__":
    main()
