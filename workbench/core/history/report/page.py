"""The report's page frame: the sections' anchors and headings, the stylesheet (the sweep report uses it too) and the
page around the sections. No external CSS, JS or fonts: the file stands on its own.
"""

from __future__ import annotations

from .html import esc


SECTIONS = {  # anchor → heading; the tests look for these headings
    "runs": "Runs covered",
    "curves": "Curves",
    "metrics": "Final metrics",
    "config": "Configuration and environment",
    "compile": "Compile report",
    "insight": "Where the time and the memory go",
    "layers": "Inside the network",
    "alerts": "Alerts",
    "comparison": "Comparison",
    "failures": "Failures",
}


def section(anchor: str, body: str) -> str:
    return f"<section id={anchor}><h2>{SECTIONS[anchor]}</h2>{body}</section>"


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;max-width:1040px;margin:2em auto;
padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em;margin:1.4em 0 .4em}h4{margin:1em 0 .3em}
table{border-collapse:collapse;margin:.4em 0}th,td{border:1px solid #e2e2e2;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f6f6f6;font-weight:600}tr.diff td,tr.diff th{background:#fff4c2}
table.confusion td{text-align:right;min-width:2.4em}
pre,code{font:12px ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word;margin:0}
.muted{color:#666}.missing{color:#8a5a00;background:#fff8e6;padding:.4em .6em}
.failure{border-left:4px solid #c62828;background:#fdf0f0;padding:.3em .8em;margin:.6em 0}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.4em;vertical-align:-1px}
.legend span{margin-right:1.4em;white-space:nowrap}
svg.chart{width:100%;max-width:760px;height:auto;font-size:11px;fill:#444}
svg .plot{fill:#fff;stroke:#ccc}svg .grid{stroke:#eee}svg .axis{stroke:#999}svg .label{fill:#666}
svg .marker{stroke:#fff;stroke-width:1.2}
.marklegend{font-size:12px;color:#444}.marklegend>span{margin-right:1.2em;white-space:nowrap;cursor:help}
.card{border:1px solid #e2e2e2;border-left:4px solid #f58518;padding:.2em .9em .6em;margin:.7em 0}
.card h5{font-size:1em;margin:.5em 0 .1em}.card .inside{color:#8a5a00}pre.recipe{background:#f6f8fa;padding:.5em .7em}
.verdict.ok{color:#2e7d32;font-weight:600}.verdict.warn{color:#8a5a00;font-weight:600}
.verdict.bad{color:#c62828;font-weight:600}
.gallery{display:flex;flex-wrap:wrap;gap:10px}
figure{margin:0;width:96px;font-size:11px;text-align:center}
figure img{image-rendering:pixelated;background:#000;display:block;margin:0 auto 2px}
nav a{margin-right:1em}
"""


def page(title: str, sections: list[str]) -> str:
    nav = "".join(f"<a href='#{anchor}'>{heading}</a>" for anchor, heading in SECTIONS.items()
                  if f"<section id={anchor}>" in "".join(sections))
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{esc(title)}</title>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{CSS}</style></head>"
            f"<body><h1>{esc(title)}</h1><nav>{nav}</nav>{''.join(sections)}</body></html>\n")
