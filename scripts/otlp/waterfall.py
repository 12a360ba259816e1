#!/usr/bin/env python3
"""Draws one operation's trace, as an OTLP receiver got it, as a waterfall PNG (for the
README; no tracing UI runs here). Reads the JSON lines of scripts/otlp/receiver.py.

Usage: waterfall.py RECEIVED.jsonl OPERATION OUT.png
"""
import json
import sys

from PIL import Image, ImageDraw, ImageFont

received, operation, out = sys.argv[1], sys.argv[2], sys.argv[3]
spans = [json.loads(line) for line in open(received) if '"type": "span"' in line]
spans = [s for s in spans if s["attributes"].get("reqtop.operation") == operation]
root = next(s for s in spans if s["kind"] == 1)
attempts = sorted((s for s in spans if s["kind"] == 3), key=lambda s: s["start"])
start, end = root["start"], root["end"]

font = ImageFont.load_default(size=15)
small = ImageFont.load_default(size=13)
left, width, row = 330, 760, 46
height = 70 + row * (1 + len(attempts)) + 40
image = Image.new("RGB", (left + width + 30, height), "white")
draw = ImageDraw.Draw(image)


def x(t):
    return left + (t - start) / max(1, end - start) * width


draw.text((16, 14), f"trace {root['traceId'][:16]}…  service {root['service']}  ({(end - start) / 1e9:.2f} s)", fill="black", font=font)
for i in range(0, 11):
    t = start + (end - start) * i / 10
    draw.line([(x(t), 44), (x(t), height - 30)], fill="#e6e6e6")
    draw.text((x(t) - 12, height - 26), f"{(t - start) / 1e9:.1f}s", fill="#777", font=small)


def bar(y, span, label, colour):
    draw.text((16, y + 6), label, fill="black", font=font)
    draw.rectangle([x(span["start"]), y + 4, max(x(span["end"]), x(span["start"]) + 3), y + 26], fill=colour)
    for event in span["events"]:
        ex = x(event["time"])
        draw.polygon([(ex, y + 28), (ex - 5, y + 38), (ex + 5, y + 38)], fill="#c77700")
        detail = event["attributes"].get("reqtop.retry.delay")
        text = event["name"] + (f" {detail:.2f}s" if isinstance(detail, float) else "")
        draw.text((ex + 7, y + 28), text, fill="#c77700", font=small)


y = 50
bar(y, root, f"request {operation}", "#9bb7d4")
for span in attempts:
    y += row
    a = span["attributes"]
    status = a.get("http.response.status_code", a.get("error.type", "-"))
    label = f"  {span['name']} attempt {a.get('reqtop.attempt')}: {status}"
    if "http.request.resend_count" in a:
        label += f" (resend {a['http.request.resend_count']})"
    bar(y, span, label, "#d9534f" if span["status"] == 2 else "#5cb85c")
image.save(out)
