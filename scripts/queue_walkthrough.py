"""The queue outliving its window, end to end, as a user meets it: five runs queued in the window (three for this
computer, two for a host: the tests' loopback sshd), the window closed with "Keep working in the background", the
runs trained with no window (this computer's by a `workbench queue work` of their own, the host's by the host's own
queue), then the window opened again, taking the host's runs back into the history.

    xvfb-run -a -s "-screen 0 1440x900x24" python scripts/queue_walkthrough.py docs/screenshots/queue

writes OUT/before-closing.png (the Queue dock with the five entries), OUT/after-reopening.png (the same dock in the
window opened again) and OUT/queue-ls.txt (`workbench queue ls` while the window was closed, then after), and prints
how long each step took. Settings and history live in a temporary folder: nothing of the user's is read or changed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEMP = Path(tempfile.mkdtemp(prefix="workbench-queue-"))
os.environ["WORKBENCH_CONFIG_DIR"] = str(TEMP / "config")
os.environ["WORKBENCH_DATA_DIR"] = str(TEMP / "data")
CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))

from PySide6.QtCore import Qt, QTimer  # noqa: E402  (after the folders are set)
from PySide6.QtWidgets import QApplication, QMessageBox  # noqa: E402

from tests.support.sshd import start_sshd  # noqa: E402
from workbench.core.ground.config import TrainConfig  # noqa: E402
from workbench.core.history.queue import QUEUED, RUNNING, RunQueue  # noqa: E402
from workbench.ui.app import create_app  # noqa: E402
from workbench.ui.main_window import MainWindow  # noqa: E402

TINY = TrainConfig(epochs=1, max_steps=300, hidden_dim=32, device="cpu")


def show_queue_dock(window: MainWindow) -> None:
    window.docks["queue"].raise_()
    window.resizeDocks([window.docks["queue"]], [300], Qt.Vertical)  # every entry in sight


def queue_ls(out: Path, title: str) -> None:
    listed = subprocess.run([sys.executable, "-m", "workbench", "queue", "ls"], capture_output=True, text=True,
                            env=os.environ)
    with open(out / "queue-ls.txt", "a") as log:
        log.write(f"$ workbench queue ls   # {title}\n{listed.stdout}{listed.stderr}\n")
    print(f"$ workbench queue ls   # {title}\n{listed.stdout}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "queue-ls.txt").unlink(missing_ok=True)
    server = start_sshd(TEMP / "sshd", "127.0.0.2")
    os.environ["WORKBENCH_SSH"] = server.ssh_command
    app = create_app(sys.argv[:1])
    started = time.monotonic()

    # 1. Five entries lined up in the window (paused while they are), then the window closed, keeping them working.
    window = MainWindow()
    window.show()
    show_queue_dock(window)
    feature = window.queue

    def line_up() -> None:
        feature.panel.pause.click()
        for config in (TINY, TINY.replace(lr=0.01), TINY.replace(seed=3)):
            feature.queue.add(config)
        for config in (TINY.replace(hidden_dim=64), TINY.replace(seed=4)):
            feature.queue.add(config, place=server.address, python=server.remote_python)
        feature.show_queue()
        QTimer.singleShot(800, close)

    def close() -> None:
        window.grab().save(str(args.out / "before-closing.png"))
        QTimer.singleShot(1000, keep_working)  # the question the window asks, answered as a user would
        window.close()

    def keep_working() -> None:
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox), box
        next(button for button in box.buttons() if button.text() == "Keep working in the background").click()

    window.kernel.capabilitiesChanged.connect(lambda _caps: QTimer.singleShot(300, line_up))
    app.exec()
    print(f"window closed after {time.monotonic() - started:.1f} s", flush=True)

    # 2. No window: this computer's runner and the host's own queue train the entries.
    with RunQueue() as queue:
        while any(entry.state == QUEUED or (entry.state == RUNNING and not entry.handed)
                  for entry in queue.entries()):
            time.sleep(1)
    queue_ls(args.out, "the window closed: this computer's entries done, the host's trained there")
    from workbench.core.run.queue_handover import host_queue_state
    from workbench.core.run.remote.ssh import Remote

    with RunQueue() as queue:
        keys = {entry.handed.rpartition(":")[0] for entry in queue.entries() if entry.handed}
    remote = Remote.parse(server.address, server.remote_python)
    while any(host_queue_state(remote, key).alive for key in keys):
        time.sleep(1)
    print(f"every run trained, no window open, after {time.monotonic() - started:.1f} s", flush=True)

    # 3. The window opened again: the host's runs taken back into the history.
    again = MainWindow()
    again.show()
    show_queue_dock(again)

    def taken_back() -> None:
        if any(entry.state == RUNNING for entry in again.queue.queue.entries()):
            QTimer.singleShot(500, taken_back)
            return
        again.queue.show_queue()
        QTimer.singleShot(800, lambda: (again.grab().save(str(args.out / "after-reopening.png")), again.close()))

    QTimer.singleShot(1000, taken_back)
    app.exec()
    queue_ls(args.out, "the window opened again: the host's runs taken back")
    print(f"done after {time.monotonic() - started:.1f} s", flush=True)
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
