#!/usr/bin/env bash
# `gpufleet report --format pdf` end to end (issue #25): the report of a small scripted cluster
# (demo_cluster.sh: two teams, a busy training, an idle notebook) printed by Chromium, then
# rendered back to PNG by pdftoppm at 60 dpi. Checks: A4 pages, as many PNGs as pages; page 1
# has the three charts' text (pdftotext) with each chart on one page, dark text and each
# chart colour in real amounts; CHROMIUM set to nothing that runs fails with the fix, writing
# no file; --format pdf without --output is a usage error. The PDF and its PNGs are kept in
# $GF_REPORT_ARTIFACTS when set.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/demo_cluster.sh"
need jq python3
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "skip: no Chromium at $CHROMIUM (apt-get install chromium, or set CHROMIUM)"; exit $SKIP; }
command -v pdftoppm >/dev/null || { echo "skip: no pdftoppm (apt-get install poppler-utils; scripts/bootstrap.sh installs it)"; exit $SKIP; }
export CHROMIUM

# The figures must fall in one calendar month (UTC): started in its last 150 s, wait for the next.
month_left=$(( $(date -u -d "$(date -u +%Y-%m-01) +1 month" +%s) - $(date -u +%s) ))
[ "$month_left" -ge 150 ] || sleep $((month_left + 1))

demo_cluster
WAIT_FOR_SECONDS=150 wait_for "report minutes of every demo job" demo_report_ready
MONTH=$(date -u +%Y-%m)

# 1. Bad use fails before anything is printed.
out=$(gf report --format pdf 2>&1) && fail "--format pdf without --output succeeded"
grep -q -- "--output FILE" <<<"$out" || fail "no --output: $out"
rc=0; out=$(CHROMIUM=$WORK/no-chromium gf report --format pdf --output "$WORK/none.pdf" 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "CHROMIUM missing: exit $rc: $out"
grep -q "CHROMIUM=$WORK/no-chromium" <<<"$out" && grep -q "apt-get install chromium" <<<"$out" \
  || fail "CHROMIUM missing, the message names no fix: $out"
[ ! -e "$WORK/none.pdf" ] || fail "a PDF was written without Chromium"
ok "without --output or Chromium: refused with the fix ($out)"

# 2. The PDF: pages A4 (595 x 842 pt), as many PNGs as pages.
gf report --period "$MONTH" --format pdf --output "$WORK/report.pdf" || fail "report --format pdf"
head -c 5 "$WORK/report.pdf" | grep -q '^%PDF-' || fail "report.pdf is not a PDF"
pages=$(pdfinfo "$WORK/report.pdf" | awk '/^Pages:/ {print $2}')
pdfinfo "$WORK/report.pdf" | awk '/^Page size:/ { ok = $3 > 594 && $3 < 596 && $5 > 841 && $5 < 843 }
  END { exit !ok }' || fail "not A4 (595 x 842 pt): $(pdfinfo "$WORK/report.pdf")"
[ "$pages" -ge 2 ] && [ "$pages" -le 6 ] || fail "$pages pages (a 4-GPU month: 2 to 6)"
pdftoppm -png -r 60 "$WORK/report.pdf" "$WORK/page"
pngs=("$WORK"/page-*.png)
# Kept for a person to look at (CTest sets the folder in the build dir).
if [ -n "${GF_REPORT_ARTIFACTS:-}" ]; then
  rm -rf "$GF_REPORT_ARTIFACTS"; mkdir -p "$GF_REPORT_ARTIFACTS"
  cp "$WORK/report.pdf" "${pngs[@]}" "$GF_REPORT_ARTIFACTS/"
fi
[ "${#pngs[@]}" = "$pages" ] || fail "${#pngs[@]} PNGs of $pages pages"
ok "report.pdf: $pages A4 pages, $(stat -c %s "$WORK/report.pdf") bytes"

# 3. Each chart's title, legend and axis name on one page (none cut by a page break), all on the
#    first; the teams and the idle notebook's job in them.
page_text() { pdftotext -f "$1" -l "$1" -layout "$WORK/report.pdf" -; }
first=$(page_text 1)
for want in "Allocated vs used per day" "capacity (GPU-hours observed)" "day of $MONTH (UTC)" \
            "GPU-hours per team" "allocated, not used" "vision" "nlp" \
            "Top wasters" "job $DEMO_NOTEBOOK notebook" "GPU-hours idle"; do
  grep -qF -- "$want" <<<"$first" || fail "page 1 lacks '$want':
$first"
done
ok "page 1: the three charts whole, with their legends and axes"

# 4. Page 1 as pixels: text (dark grey to black) and each chart colour (report_html.cpp's
#    used, allocated and idle fills), far from blank; a chart drawn empty or in the wrong colours
#    fails.
python3 "$(dirname "$0")/png_pixels.py" "${pngs[0]}" \
  dark=#000000 used=#0a3d91 allocated=#56b4e9 idle=#d55e00 >"$WORK/pixels.json" \
  || fail "png_pixels.py ${pngs[0]}"
jq -e '.width == 496 and .height == 702' "$WORK/pixels.json" >/dev/null \
  || fail "page 1 at 60 dpi is not A4's 496 x 702: $(cat "$WORK/pixels.json")"
jq -e '.colours | .dark >= 2000 and .used >= 150 and .allocated >= 150 and .idle >= 50' \
  "$WORK/pixels.json" >/dev/null || fail "page 1's pixels: $(cat "$WORK/pixels.json")"
ok "page 1 pixels: $(jq -c .colours "$WORK/pixels.json")"
