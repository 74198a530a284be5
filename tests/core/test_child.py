"""Which rank caused a torchrun failure, read from what torchrun and the ranks print (formats as torch 2.14 prints
them; the end-to-end runs in tests/e2e/test_distributed.py cannot force every ordering of a failure)."""

from __future__ import annotations

from workbench.core.child import torchrun_culprit


def entry(index: int, rank: int, exitcode: str) -> str:
    return (f"[{index}]:\n  time      : 2026-11-29_16:34:41\n  host      : localhost\n"
            f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : {exitcode}\n  error_file: <N/A>\n"
            f"  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n")


def summary(failures: list[str], root: str) -> str:
    return ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + "=" * 60 + "\ntrain FAILED\n"
            + "-" * 60 + "\nFailures:\n" + "".join(failures) + "-" * 60
            + "\nRoot Cause (first observed failure):\n" + root + "=" * 60 + "\n")


def test_a_rank_torchrun_terminated_is_not_the_cause_of_the_failure():
    # Rank 1 raised; torchrun then sent SIGTERM to rank 0 before rank 0 noticed anything (the CI failure).
    stderr = ("rank 1 failed (crashed): RuntimeError: planted failure on rank 1\n"
              + summary([entry(1, 0, "-15 (pid: 16460)  (SIGTERM)")], entry(0, 1, "3 (pid: 16461) ")))
    assert torchrun_culprit(stderr) == (1, "crashed: RuntimeError: planted failure on rank 1")


def test_a_rank_killed_from_outside_is_the_cause_even_when_its_peer_spoke_last():
    stderr = ("rank 0 failed (crashed): RuntimeError: Connection closed by peer [127.0.0.1]:29500\n"
              + summary([entry(1, 0, "1 (pid: 10)")], entry(0, 1, "-9 (pid: 11)  (SIGKILL)")))
    assert torchrun_culprit(stderr) == (1, "killed by SIGKILL")


def test_only_peers_complaining_about_a_vanished_rank_are_symptoms():
    stderr = ("rank 0 failed (crashed): RuntimeError: Connection reset by peer\n"
              + summary([entry(1, 0, "1 (pid: 10)")], entry(0, 1, "7 (pid: 11) ")))
    assert torchrun_culprit(stderr) == (1, "exited with code 7")  # torchrun's root cause, nothing better known


def test_a_root_cause_terminated_from_outside_is_named_as_such():
    stderr = summary([], entry(0, 1, "-15 (pid: 11)  (SIGTERM)"))
    assert torchrun_culprit(stderr) == (1, "killed by SIGTERM")


def test_no_summary_means_no_culprit():
    assert torchrun_culprit("W1129 some warning\nTraceback (most recent call last):\n") is None


def test_when_every_rank_was_killed_torchrun_s_root_cause_decides():
    stderr = summary([entry(1, 0, "-9 (pid: 10)  (SIGKILL)")], entry(0, 1, "-9 (pid: 11)  (SIGKILL)"))
    assert torchrun_culprit(stderr) == (1, "killed by SIGKILL")
