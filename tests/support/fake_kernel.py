"""A kernel process without torch, and the run request sent to it: what the tests of the parent's side of a kernel
share (tests/core/test_child.py, test_handshake.py), so that the wire is checked without a training process."""

from __future__ import annotations

from workbench.core.ground.config import TrainConfig
from workbench.core.run import protocol
from workbench.core.run.run_request import Launch, RunRequest

# A stand-in kernel (no torch): it says hello and ready as kernel_main does, then answers the train job the way the
# test names in argv[1], echoing every message it gets from the parent back as a Notice, so that the wire is checked.
FAKE_KERNEL = f"""
import json, os, signal, socket, sys
from workbench.core.ground.events import Notice, RunFinished, Step, to_json
from workbench.core.run.protocol import event_line
host, port = os.environ["{protocol.ADDRESS_ENV}"].rsplit(":", 1)
conn = socket.create_connection((host, int(port)))
incoming = conn.makefile("r")
say = lambda line: conn.sendall((line + "\\n").encode())
say(json.dumps({{"hello": os.environ["{protocol.TOKEN_ENV}"], "pid": os.getpid(), "protocol": 1}}))
say(json.dumps({{"ready": True}}))
job = json.loads(incoming.readline())
mode = sys.argv[1]
if mode == "refuse":
    say(json.dumps({{"id": job["id"], "error": {{"kind": "config", "message": "planted refusal", "hint": "h"}}}}))
    sys.exit(0)
if mode == "die":
    sys.stderr.write("planted last words\\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
say(event_line(job["id"], to_json(Step(1, 1, 0.5, 1.0, 0.1, {{}}))))  # training: a stop now gets its grace
say(event_line(job["id"], to_json(Notice("info", json.dumps(job)))))
cancel = json.loads(incoming.readline())
say(event_line(job["id"], to_json(Notice("info", json.dumps(cancel)))))
say(event_line(job["id"], to_json(RunFinished(steps=3, epochs=1, seconds=0.5, stopped=True))))
"""

REQUEST = RunRequest(config=TrainConfig(hidden_dim=16, max_steps=3), out_dir="/nowhere/run", db=None, record=False,
                     launch=Launch())
