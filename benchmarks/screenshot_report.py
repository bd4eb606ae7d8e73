"""The README's picture of `bpe-fast report` (docs/report.png), made from a real report, not by hand.

    python benchmarks/screenshot_report.py --corpus /work/data/real.txt -o docs/report.png

Trains a 4,096-token tokenizer on the corpus's first 20 MB (`bpe-fast train --max-bytes 20MB --vocab-size 4096
--special-token '<|endoftext|>'`), takes the next 5 MB (whole lines) as held-out evaluation text, runs
`bpe-fast report -t real-4096/ --eval held_out.txt --against gpt2/` (GPT-2's vocab.json and merges.txt from
tests/fixtures) and screenshots the page's top 1,400 px at 1,000 px wide in headless Chromium (playwright
driving a system chromium when there is one, e.g. Debian's `apt-get install chromium`, else playwright's own).
--keep DIR keeps the tokenizer, the text and report.html. Needs `pip install playwright`.
"""
import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bpe_fast.synthetic import parse_size

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
EOT = "<|endoftext|>"


def held_out(corpus, start, size, output):
    """size bytes of whole lines of corpus from the first line that starts at or after byte `start`."""
    with open(corpus, "rb") as f:
        f.seek(max(start - 1, 0))
        data = f.read(size + 1 + 1_000_000)
    if start > 0:
        data = data[data.index(b"\n") + 1:]
    data = data[:size]
    data = data[:data.rindex(b"\n") + 1]
    output.write_bytes(data)
    return len(data)


LOCAL = ("file:///", "data:")     # what a page may load: file://HOST/ and everything else is external


class NoBrowser(RuntimeError):
    """Neither a system Chromium nor playwright's own is there."""


def chromium_path():
    """A system Chromium or Chrome for playwright to drive (playwright's own download may be unreachable)."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome",
                 "chromium-headless-shell", "headless_shell"):
        path = shutil.which(name)
        if path:
            return path
    return None


def visit_local_page(page_path, visit, width=1000, height=1400):
    """Open the page in headless Chromium (a system one, else playwright's own) with every request but LOCAL
    ones aborted, so nothing leaves the machine, and call visit(page). Returns (the URLs it requested that were
    not local, visit's result). ImportError without playwright; NoBrowser without a Chromium."""
    from playwright.sync_api import sync_playwright
    requests = []
    with sync_playwright() as p:
        system = chromium_path()
        if system is None and not Path(p.chromium.executable_path).exists():
            raise NoBrowser("no Chromium: neither a system chromium/chrome on PATH (apt-get install chromium) "
                            "nor playwright's own (playwright install chromium)")
        browser = p.chromium.launch(executable_path=system) if system else p.chromium.launch()
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.on("request", lambda r: requests.append(r.url))
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(LOCAL)
                       else route.abort())
            page.goto(Path(page_path).resolve().as_uri())
            result = visit(page)
        finally:
            browser.close()
    return [u for u in requests if not u.startswith(LOCAL)], result


def screenshot(page_path, output, width, height):
    """Screenshot the page's top `height` px; refuse if it asked for anything but local files."""
    def shoot(page):
        full = page.evaluate("document.documentElement.scrollHeight")
        page.screenshot(path=str(output), full_page=True,
                        clip={"x": 0, "y": 0, "width": width, "height": min(height, full)})
    external, _ = visit_local_page(page_path, shoot, width, height)
    if external:
        raise SystemExit(f"the page requested {external}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="a UTF-8 text file (e.g. real.txt of make_real_corpus.sh)")
    ap.add_argument("--train-bytes", type=parse_size, default="20MB")
    ap.add_argument("--eval-bytes", type=parse_size, default="5MB")
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--width", type=int, default=1000)
    ap.add_argument("--height", type=int, default=1400)
    ap.add_argument("--keep", metavar="DIR", help="keep the tokenizer, evaluation text and report.html here")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "report.png"))
    args = ap.parse_args(argv)
    if importlib.util.find_spec("playwright") is None:       # before the training it would waste
        raise SystemExit("screenshot_report.py needs playwright: pip install playwright")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="report_png_"))
    work.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "bpe_fast"]
    corpus, output = os.path.abspath(args.corpus), os.path.abspath(args.output)
    try:
        # run in `work` with relative paths: the page shows "held_out.txt", not a temporary folder
        tok = f"real-{args.vocab_size}"
        subprocess.run(cli + ["-q", "train", corpus, "--max-bytes", str(args.train_bytes), "--vocab-size",
                              str(args.vocab_size), "--special-token", EOT, "-o", tok], check=True, cwd=work)
        n = held_out(corpus, args.train_bytes, args.eval_bytes, work / "held_out.txt")
        (work / "gpt2").mkdir(exist_ok=True)
        shutil.copy(FIXTURES / "gpt2_vocab.json", work / "gpt2" / "vocab.json")
        shutil.copy(FIXTURES / "gpt2_merges.txt", work / "gpt2" / "merges.txt")
        subprocess.run(cli + ["report", "-t", tok, "--eval", "held_out.txt", "--against", "gpt2",
                              "-o", "report.html"], check=True, cwd=work)
        try:
            screenshot(work / "report.html", output, args.width, args.height)
        except NoBrowser as exc:
            raise SystemExit(f"screenshot_report.py: {exc}") from None
        print(f"{output}: {os.path.getsize(output):,} bytes (report on {n:,} bytes of held-out text)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
