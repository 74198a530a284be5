"""Screenshots of the user guide and of the README's first screen, as a reader sees them: Chromium headless at
1440×900, from the files on disk (the guide as `make docs` built it into resources/guide/, offline).

    .venv/bin/python scripts/guide_shots.py docs/screenshots/guide

writes OUT/readme-first-screen.png and a PNG per page in PAGES, and prints the README's line count.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import markdown

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "resources" / "guide"
PAGES = ("index.html", "window/queue.html", "reference/settings.html")
STYLE = ("body{font:16px/1.5 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;max-width:980px;margin:24px auto;"
         "padding:0 32px;color:#1f2328}img{max-width:100%}pre{background:#f6f8fa;padding:12px;overflow:auto}"
         "code{background:#f6f8fa;padding:1px 4px}h1,h2{border-bottom:1px solid #d1d9e0;padding-bottom:6px}")


def shoot(url: str, out: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        sys.exit("Chromium is not installed: apt install chromium")
    subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1440,900", f"--screenshot={out}", url], check=True, capture_output=True,
                   timeout=120)
    print(f"wrote {out} ({url})")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not (GUIDE / "index.html").is_file():
        sys.exit("the guide is not built: make docs")
    readme = (ROOT / "README.md").read_text()
    print(f"README.md: {len(readme.splitlines())} lines")
    with tempfile.TemporaryDirectory() as temp:
        page = Path(temp) / "README.html"
        page.write_text(f"<html><head><meta charset='utf-8'><base href='{ROOT.as_uri()}/'><style>{STYLE}</style>"
                        f"</head><body>{markdown.markdown(readme, extensions=['fenced_code', 'tables'])}</body></html>")
        shoot(page.as_uri(), args.out / "readme-first-screen.png")
    for name in PAGES:
        shoot((GUIDE / name).as_uri(), args.out / (name.replace("/", "-").removesuffix(".html") + ".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
