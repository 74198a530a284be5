"""A node of a run across hosts is told its interface, and the preflight's clock rule (core/run/hosts/): the
pieces that need no host to be shown."""

from __future__ import annotations

from workbench.core.run.hosts.preflight import MAX_SKEW_S, _clocks
from workbench.core.run.process import STORE_ADDRESS_ENV, launch_env
from workbench.core.run.run_request import Launch


def test_a_node_s_process_group_uses_the_interface_the_preflight_chose():
    node = Launch(nproc_per_node=1, nnodes=2, node_rank=1, master_addr="10.0.0.5", master_port=29500, interface="eth1")
    assert launch_env(node) == {STORE_ADDRESS_ENV: "10.0.0.5", "GLOO_SOCKET_IFNAME": "eth1",
                                "NCCL_SOCKET_IFNAME": "eth1"}
    by_hand = Launch(nproc_per_node=1, nnodes=2, node_rank=1, master_addr="10.0.0.5", master_port=29500)
    assert launch_env(by_hand) == {STORE_ADDRESS_ENV: "10.0.0.5"}  # no choice made: NCCL's and Gloo's own


def test_a_clock_further_apart_than_the_bound_is_red_with_the_fix():
    cells: dict = {}
    names = ["a", "b", "c"]
    _clocks(names, {"a": 0.3, "b": -(MAX_SKEW_S + 0.5), "c": MAX_SKEW_S - 0.1}, dict.fromkeys(names), cells)
    assert [cells[name, "clock"].ok for name in names] == [True, False, True]
    assert cells["b", "clock"].detail == f"{MAX_SKEW_S + 0.5:.1f} s behind this computer's"
    assert "timedatectl set-ntp true" in cells["b", "clock"].fix
