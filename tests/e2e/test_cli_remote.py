"""`workbench train --host` and `workbench attach` through a real sshd on 127.0.0.1 (tests/support/sshd.py), as a shell
runs them: the progress streams here, the files stay on the host until asked for, the run is recorded here with its
host, and a failure is one line naming the step that failed."""

from __future__ import annotations

from ..helpers import assert_one_error_line, shell


def test_train_there_copy_back_and_attach_again(ssh_server, remote, tmp_path):
    env = {"WORKBENCH_SSH": ssh_server.ssh_command}
    db = tmp_path / "local.sqlite"
    trained = shell("train", "--host", ssh_server.address, "--remote-python", ssh_server.remote_python,
                    "--epochs", "1", "--out", tmp_path / "back", "--db", db, cwd=tmp_path, env_extra=env)
    assert trained.returncode == 0, trained.stderr
    assert "finished: 125 steps" in trained.stdout and f"the run's files are on {ssh_server.address}" in trained.stdout
    assert sorted(path.name for path in (tmp_path / "back").iterdir()) == [
        "checkpoint.pt", "checkpoint.safetensors", "events.jsonl", "metrics.json"]
    listed = shell("runs", "--db", db, cwd=tmp_path)
    assert f"finished on {ssh_server.address}" in listed.stdout
    runs = shell("attach", ssh_server.address, "--remote-python", ssh_server.remote_python, cwd=tmp_path,
                 env_extra=env)
    assert runs.returncode == 0 and "none is training" in runs.stdout
    out_dir = trained.stdout.split(f"the run's files are on {ssh_server.address}: ")[1].split()[0]
    key = next(line.split()[0] for line in runs.stdout.splitlines() if " finished " in line and out_dir in line)
    again = shell("attach", ssh_server.address, key, "--remote-python", ssh_server.remote_python, "--db", db,
                  cwd=tmp_path, env_extra=env)
    assert again.returncode == 0, again.stderr
    assert "finished: 125 steps" in again.stdout


def test_a_host_that_cannot_be_reached_is_one_line_naming_the_step(ssh_server, tmp_path):
    failed = shell("train", "--host", "no-such-host.invalid", "--epochs", "1", cwd=tmp_path,
                   env_extra={"WORKBENCH_SSH": ssh_server.ssh_command})
    line = assert_one_error_line(failed.stderr)
    assert failed.returncode == 2 and "the name no-such-host.invalid cannot be resolved" in line
