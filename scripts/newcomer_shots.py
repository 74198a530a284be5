"""Screenshots of what the newcomer's second hour asked to see, without training (for notes and the user guide).

    xvfb-run -a -s "-screen 0 1366x768x24" env QT_QPA_PLATFORM=xcb .venv/bin/python scripts/newcomer_shots.py OUT_DIR

Writes into OUT_DIR, each name ending in the screen's size (e.g. setup_tabbed-1366x768.png):
setup_tabbed (the Setup form after Tab through every field, the last one focused), palette_settings / palette_diff /
palette_seed (the command palette searching those words), code_no_trace (Code… for a compiled run that recorded no
compile trace) and report_accuracy (the report's accuracy chart of three synthetic seed runs, its SVG drawn as it
is written). The window opens at the size it picks for the screen, with settings and history in a temporary
folder, so nothing of the user's is read or changed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TEMP = Path(tempfile.mkdtemp(prefix="workbench-shots-"))
os.environ["WORKBENCH_CONFIG_DIR"] = str(TEMP / "config")
os.environ["WORKBENCH_DATA_DIR"] = str(TEMP / "data")

from PySide6.QtCore import QByteArray, Qt, QTimer  # noqa: E402  (after the folders are set)
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from workbench.core.ground.config import TrainConfig  # noqa: E402
from workbench.core.ground import appinfo  # noqa: E402
from workbench.core.ground.events import RunFinished, RunStarted, Versions  # noqa: E402
from workbench.core.ground.results import RunResults  # noqa: E402
from workbench.core.history.report.build import build_report  # noqa: E402
from workbench.core.history.runs import RunStore  # noqa: E402
from workbench.ui.app import create_app  # noqa: E402
from workbench.ui.commands import CommandPalette  # noqa: E402
from workbench.ui.main_window import MainWindow  # noqa: E402

PALETTE_WORDS = ("settings", "diff", "seed")
CHART_STYLE = (".plot{fill:#fff;stroke:#ccc}.grid{stroke:#eee}.axis{stroke:#999}.label{fill:#666}"
               ".marker{stroke:#fff;stroke-width:1.2}text{font-size:11px;fill:#444}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    app = create_app(sys.argv[:1])
    screen = QGuiApplication.primaryScreen().size()
    size = f"{screen.width()}x{screen.height()}"
    window = MainWindow()
    window.show()
    steps = [lambda: setup_tabbed(window, args.out / f"setup_tabbed-{size}.png"),
             *(lambda word=word: palette(window, word, args.out / f"palette_{word}-{size}.png")
               for word in PALETTE_WORDS),
             lambda: code_no_trace(window, args.out / f"code_no_trace-{size}.png"),
             lambda: report_accuracy(args.out / f"report_accuracy-{size}.png"),
             lambda: (window.runner.shutdown(), window.close())]

    def next_step() -> None:
        steps.pop(0)()
        if steps:
            QTimer.singleShot(400, next_step)

    QTimer.singleShot(1500, next_step)
    app.exec()
    for path in sorted(args.out.glob(f"*-{size}.png")):
        print(f"wrote {path}")
    return 0


def setup_tabbed(window: MainWindow, out: Path) -> None:
    """Tab from the Setup form's first field through every field, as a keyboard user does, then grab."""
    window.docks["setup"].raise_()
    window.activateWindow()
    fields = [field for field in window.setup.findChildren(QWidget) if field.focusPolicy() & Qt.TabFocus
              and field.isVisibleTo(window.setup) and field.isEnabled()]
    for field in fields:  # each takes the focus in turn, as Tab gives it: the form scrolls to it, never sideways
        field.setFocus(Qt.TabFocusReason)
        QApplication.processEvents()
    window.grab().save(str(out))


def palette(window: MainWindow, word: str, out: Path) -> None:
    dialog = CommandPalette(window)
    dialog.show()
    dialog.query.setText(word)
    QApplication.processEvents()
    frame = window.grab()
    painter = QPainter(frame)
    painter.drawPixmap(dialog.mapTo(window, dialog.rect().topLeft()) if dialog.parent() is window
                       else window.mapFromGlobal(dialog.mapToGlobal(dialog.rect().topLeft())), dialog.grab())
    painter.end()
    frame.save(str(out))
    dialog.close()


def code_no_trace(window: MainWindow, out: Path) -> None:
    """A compiled run that recorded no compile trace, then Code…: one message and the button that turns it on."""
    panel = window.compile_panel
    window.docks["compile"].raise_()
    started = RunStarted(config=TrainConfig(backend="inductor"), device="cpu", device_name="CPU",
                         versions=Versions(workbench=appinfo.version(), torch="2.14.1", python="3.11", cuda=""),
                         train_size=4000, val_size=1000, steps_per_epoch=125, total_steps=125)
    panel.add_events([started, RunFinished(steps=125, epochs=1, seconds=30.0, stopped=False,
                                           results=RunResults(backend_used="inductor"))])

    def shown(dialog) -> None:
        QTimer.singleShot(300, lambda: dialog.grab().save(str(out)) and dialog.close())

    window.compile_insight.codeShown.connect(shown)
    panel.code_button.click()


def report_accuracy(out: Path) -> None:
    """The report's accuracy chart for three seed runs of scripts/fill_history.py, its SVG drawn as written."""
    subprocess.run([sys.executable, str(Path(__file__).with_name("fill_history.py")), str(TEMP / "report.sqlite"),
                    "--runs", "3", "--long", "0", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
    with RunStore(TEMP / "report.sqlite") as store:
        records = [store.get(row.id, with_events=True) for row in store.list()]
    html, _data = build_report(records, {record.id: None for record in records})
    svgs = re.findall(r"<svg class=.?chart.*?</svg>", html, flags=re.S)
    chart = next(svg for svg in svgs if "accuracy" in svg.lower())
    # The page's stylesheet colours the chart's classes; Qt's SVG renderer reads them from a <style> in the SVG.
    chart = re.sub(r"(<svg[^>]*>)", r"\1<style>" + CHART_STYLE + "</style>", chart, count=1)
    renderer = QSvgRenderer(QByteArray(chart.encode()))
    image = QImage(renderer.defaultSize() * 2, QImage.Format_ARGB32)
    image.fill(Qt.white)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    image.save(str(out))


if __name__ == "__main__":
    sys.exit(main())
