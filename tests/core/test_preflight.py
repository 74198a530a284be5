"""The preflight of a run across hosts (core/run/hosts/preflight.py): every host × every check, on real OpenSSH
servers on distinct loopback addresses (127.0.0.2, .3, …: all of 127/8 is this machine), each a "host" with folders
of its own. A healthy set is all green; a planted fault turns its own cell red, naming host, check and fix."""

from __future__ import annotations

import socket

import pytest

from workbench.core.run.hosts.host_set import HostSetError, HostSpec, parse_hosts, read_hostfile
from workbench.core.run.hosts.preflight import CHECKS, matrix_lines, preflight
from workbench.core.run.remote.ssh import Remote

from ..helpers import call


@pytest.fixture
def hosts(loopback_hosts):
    return loopback_hosts


@pytest.fixture
def remotes(hosts, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SSH", hosts[0].ssh_command)
    return [Remote.parse(server.address, server.remote_python) for server in hosts]


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))
        return probe.getsockname()[1]


@pytest.mark.slow  # several SSH sessions to each host
def test_a_healthy_set_is_green_in_every_cell_and_again_at_once(remotes):
    a, b, _c = remotes
    port = _port()
    result = preflight([a, b], port, slots=[1, 1], device="cpu")
    assert result.ok, matrix_lines(result)
    assert preflight([a, b], port, slots=[1, 1], device="cpu").ok  # the probe's own connections do not hold it
    assert result.rendezvous == f"127.0.0.2:{port}" and result.interfaces == ("lo", "lo")
    assert "Workbench" in result.cell(str(a), "login").detail
    assert result.cell(str(b), "rendezvous").detail.startswith(f"reached 127.0.0.2:{port}")
    assert result.cell(str(a), "rendezvous").detail == f"port {port} is free on 127.0.0.2"
    assert "torch 2.14.1" in result.cell(str(b), "versions").detail
    assert "this computer's" in result.cell(str(b), "clock").detail
    lines = matrix_lines(result)
    assert len(lines) == 1 + 2 + 2 * len(CHECKS) and "✗" not in "\n".join(lines)


@pytest.mark.slow  # several SSH sessions to each host
def test_a_version_mismatch_and_a_host_not_reached_are_named_each_in_its_cell(remotes):
    a, _b, c = remotes
    gone = Remote.parse("127.0.0.9:1")  # nothing listens there
    result = preflight([a, gone, c], _port(), slots=[1, 1, 1], device="cpu")
    assert not result.ok
    cell = result.cell(str(c), "versions")
    assert cell.detail == f"torch 2.0.0 here, 2.14.1 on {a}" and "torch==2.14.1" in cell.fix
    login = result.cell(str(gone), "login")
    assert not login.ok and "refused" in login.detail.lower()
    assert all(result.cell(str(gone), check).detail == "not checked: no login" for check in CHECKS[1:])
    assert [(bad.host, bad.check) for bad in result.red] == [(str(gone), check) for check in CHECKS] + [
        (str(c), "versions")]  # nothing else is blamed


@pytest.mark.slow  # several SSH sessions to each host
def test_a_port_in_use_too_few_gpus_and_a_missing_interface_are_each_refused_with_the_fix(remotes):
    a, b, _c = remotes
    with socket.socket() as taken:
        taken.bind(("127.0.0.2", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = preflight([a, b], port, slots=[2, 1], device="cuda", interfaces={str(b): "eth9"})
    cell = result.cell(str(a), "rendezvous")
    assert not cell.ok and f"port {port} on 127.0.0.2 cannot be bound" in cell.detail and "--rdzv-port" in cell.fix
    assert result.cell(str(b), "rendezvous").detail == f"not checked: {a} could not bind the port"
    cell = result.cell(str(a), "devices")
    assert not cell.ok and "2 process(es) asked for, 0 GPU(s) there" in cell.detail and "--device cpu" in cell.fix
    cell = result.cell(str(b), "interface")
    assert not cell.ok and "has no interface eth9" in cell.detail and "lo" in cell.detail


@pytest.mark.slow  # several SSH sessions to each host
def test_the_cli_prints_the_matrix_and_fails_on_a_red_cell(remotes, hosts, capsys, tmp_path):
    a, b, c = hosts
    code, out, err = call(capsys, "preflight", "--hosts", f"{a.address},{b.address}", "--device", "cpu",
                          "--remote-python", a.remote_python, "--rdzv-port", str(_port()))
    assert code == 0, err
    assert "rendezvous port" in out.splitlines()[0] and "every check passed" in out
    hostfile = tmp_path / "hosts"  # each host with its own Python: the third's finds an older torch
    hostfile.write_text(f"{a.address} python={a.remote_python}\n{c.address} slots=1 python={c.remote_python}\n")
    code, out, err = call(capsys, "preflight", "--hostfile", hostfile, "--device", "cpu", "--rdzv-port", str(_port()))
    assert code == 2 and f"✗ {c.address} · versions: torch 2.0.0 here" in out and "nothing was started" in out


# -- naming the hosts ---------------------------------------------------------------------------------------------
def test_hosts_are_named_by_a_list_or_a_hostfile(tmp_path):
    assert parse_hosts("gpu-a, me@gpu-b:2222") == (HostSpec("gpu-a"), HostSpec("me@gpu-b:2222"))
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the lab\ngpu-a slots=4\n\ngpu-b python=/opt/wb/bin/python  # two GPUs only\n")
    assert read_hostfile(hostfile) == (HostSpec("gpu-a", 4), HostSpec("gpu-b", None, "/opt/wb/bin/python"))


@pytest.mark.parametrize("text, says", [("", "names no host"), ("a,a", "a is named twice"),
                                         ("a,-b", "'-b' in --hosts")])
def test_a_bad_host_list_is_refused_with_what_to_do(text, says):
    with pytest.raises(HostSetError, match=says):
        parse_hosts(text)


def test_a_bad_hostfile_line_is_named(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("gpu-a slots=4\ngpu-b slots=two\n")
    with pytest.raises(HostSetError, match="line 2 of .*'slots=two' is not slots=N .N ≥ 1. or python=COMMAND"):
        read_hostfile(hostfile)
