#!/usr/bin/env bash
# The plan report in a real browser: render the HTML of a plan headless in Chromium, print it to
# PDF and take a screenshot, then check that
#   - the page loads nothing from the network (no http:// or https:// in a src or href),
#   - every column header of the candidate and best-per-system tables is in the PDF's text
#     (pdftotext, poppler-utils), so the print layout keeps every column,
#   - the screenshot is not blank (its pixels are not all one colour).
# Exits 77 (ctest SKIP_RETURN_CODE) when Chromium or pdftotext is not installed.
# Usage: browser_report.sh CLUSTERSIM PLAN.json
set -euo pipefail
clustersim="$1"
plan="$2"
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ] || ! command -v pdftotext >/dev/null 2>&1; then
  echo "skipped: needs chromium and pdftotext (Debian packages chromium, poppler-utils)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
SOURCE_DATE_EPOCH=1765065600 "$clustersim" plan "$plan" --format html -o "$work/report.html" --quiet --threads 2

if grep -E -o '(src|href)="https?://[^"]*"' "$work/report.html"; then
  echo "FAIL: the report loads something from the network (above)"
  exit 1
fi

flags=(--headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check --disable-extensions
       --disable-background-networking --user-data-dir="$work/profile")
timeout 120 "$browser" "${flags[@]}" --no-pdf-header-footer --print-to-pdf="$work/report.pdf" \
  "file://$work/report.html" >"$work/pdf.log" 2>&1 || true
timeout 120 "$browser" "${flags[@]}" --window-size=1400,1000 --screenshot="$work/shot.png" \
  "file://$work/report.html" >"$work/shot.log" 2>&1 || true
if [ ! -s "$work/report.pdf" ] || [ ! -s "$work/shot.png" ]; then
  echo "FAIL: $browser wrote no PDF or no screenshot"; cat "$work/pdf.log" "$work/shot.log"; exit 1
fi
pdftotext "$work/report.pdf" "$work/report.txt"

python3 - "$work/report.html" "$work/report.txt" "$work/shot.png" <<'PY'
import html, re, struct, sys, zlib

page = open(sys.argv[1], encoding="utf-8").read()
text = open(sys.argv[2], encoding="utf-8").read()
norm = lambda s: re.sub(r"\s+", " ", s).strip()
# pdftotext may break a header inside a cell at a hyphen or a space: compare without whitespace.
flat = re.sub(r"\s+", "", text)
failed = False
for table in ("candidates", "best-per-system"):
    m = re.search(r'data-table="%s">.*?<thead><tr>(.*?)</tr></thead>' % table, page, re.S)
    if not m:
        print("FAIL: no table %s in the HTML" % table); failed = True; continue
    headers = [norm(html.unescape(re.sub(r"<[^>]+>", "", h))) for h in re.findall(r"<th[^>]*>(.*?)</th>", m.group(1))]
    missing = [h for h in headers if re.sub(r"\s+", "", h) not in flat]
    print("%s: %d column headers, %d missing from the PDF" % (table, len(headers), len(missing)))
    for h in missing:
        print("FAIL: column '%s' of table %s is not in the PDF text" % (h, table)); failed = True

# The screenshot: a PNG whose decoded rows hold more than one colour.
data = open(sys.argv[3], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, width, height, bpp = 8, b"", 0, 0, 0
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        bpp = {2: 3, 6: 4, 0: 1, 4: 2}[ctype] * depth // 8
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
raw = zlib.decompress(idat)
stride = width * bpp
prev = bytearray(stride)
colours = set()
for y in range(height):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 8 == 0:
        for x in range(0, width, 8):
            colours.add(bytes(line[x * bpp:(x + 1) * bpp]))
    prev = line
print("screenshot %dx%d: %d distinct colours sampled" % (width, height, len(colours)))
if len(colours) < 2:
    print("FAIL: the screenshot is blank"); failed = True
sys.exit(1 if failed else 0)
PY
echo "browser report check passed ($browser)"
