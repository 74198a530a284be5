"""The options that describe a run (every setting of TrainConfig, declared once in ground/config.py) and how they
become a TrainConfig."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """argparse type for the benchmark's counts: zero windows or steps leave nothing to take a median of."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not allowed (at least 1)")
    return value



def add_train_options(parser: argparse.ArgumentParser) -> None:
    """What `train` and `profile` both take: the settings, the output folder, the history and the processes."""
    from ..core.ground.hang import HANG_AFTER_S

    add_config_options(parser)
    parser.add_argument("--out", default=None, help="output folder (default: a new folder of its own under "
                                                     "~/.local/share/workbench/runs; every run gets one)")
    add_db_option(parser)
    ddp = parser.add_argument_group("several processes (torchrun + DistributedDataParallel; --batch-size is global)")
    ddp.add_argument("--nproc-per-node", type=int, default=1, help="processes on this machine (one per GPU)")
    ddp.add_argument("--nnodes", type=int, default=1, help="machines taking part")
    ddp.add_argument("--node-rank", type=int, default=0, help="this machine's index, 0 … nnodes-1")
    ddp.add_argument("--master-addr", default="127.0.0.1", help="address of node 0 (multi-node runs)")
    ddp.add_argument("--master-port", type=int, default=None, help="a free port on node 0, 1 … 65535 (default: picked)")
    ddp.add_argument("--hang-after", type=float, default=HANG_AFTER_S, metavar="SECONDS",
                     help="no step for this long: print every rank's stack, side by side (default "
                          f"{HANG_AFTER_S:.0f}; 0: never)")
    add_remote_options(parser)
    add_hosts_options(parser, required=False)


def add_hosts_options(parser: argparse.ArgumentParser, required: bool) -> None:
    """Several machines over SSH, one torchrun each: which (a list or a hostfile), where they meet, and by which
    network interface (what `preflight` checks and `train` launches on)."""
    group = parser.add_argument_group("several machines, over SSH (checked first: workbench preflight)")
    named = group.add_mutually_exclusive_group(required=required)
    named.add_argument("--hosts", metavar="A,B,…", help="the hosts, the first holding the rendezvous")
    named.add_argument("--hostfile", metavar="FILE", help="a host a line, 'slots=N' after it for its processes, "
                                                          "'python=COMMAND' for its Python")
    group.add_argument("--rdzv-port", type=int, default=29500, help="the rendezvous port on the first host")
    group.add_argument("--iface", action="append", default=[], metavar="HOST=INTERFACE",
                       help="the network interface a host uses (default: its route to the first host)")


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    """Where the kernels run when not here: a host reached over SSH (your ~/.ssh/config, agent and known_hosts)."""
    group = parser.add_argument_group("another machine, over SSH")
    group.add_argument("--host", default=None, metavar="[USER@]HOST[:PORT]",
                       help="run there; the progress streams here and the run is recorded here with its host")
    group.add_argument("--remote-python", default="python3", metavar="COMMAND",
                       help="the host's Python that has workbench installed (default: python3)")


def add_db_option(parser: argparse.ArgumentParser, inherited: bool = False) -> None:
    """`inherited`: a sub-action's --db must not overwrite the one given before it (`runs --db X rm 1`): argparse
    copies a sub-parser's default over the parent's value, so such an option has no default of its own."""
    parser.add_argument("--db", default=argparse.SUPPRESS if inherited else None,
                        help="run history database (default: $WORKBENCH_DB or ~/.local/share/workbench/runs.sqlite)")


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """One flag per declared setting (`TrainConfig`'s metadata), grouped as the setup form groups them. Bad values
    are refused by TrainConfig's validation (one line naming the setting), not by argparse."""
    from ..core.ground.config import GROUPS, settings

    parser.add_argument_group("run configuration").add_argument(
        "--config", metavar="JSON", help="read settings from a JSON file (flags override it)")
    groups = {name: parser.add_argument_group(name.lower()) for name in GROUPS}
    for declared in settings():
        groups[declared.group].add_argument(declared.flag, dest=declared.name, default=None,
                                            **_flag_options(declared))


SWITCH_WORDS = {"auto": None, "true": True, "false": False}  # a setting that is on, off or automatic (--dynamic)


def _flag_options(declared) -> dict:
    """argparse options for one setting: its type, how its values read, its help with range and default."""
    notes = [declared.allowed] if declared.kind in (int, float) else []
    if declared.kind is bool and declared.optional:
        shown = next(word for word, value in SWITCH_WORDS.items() if value is declared.default)
    elif declared.kind is bool:
        shown = "on" if declared.default else "off"
    elif isinstance(declared.default, float):
        shown = f"{declared.default:g}"
    else:
        shown = "" if declared.default is None else str(declared.default)
    if shown:
        notes.append(f"default: {shown}")
    help_text = (declared.help + (f" ({'; '.join(notes)})" if notes else "")).replace("%", "%%")
    if declared.kind is bool and not declared.optional:
        return {"action": argparse.BooleanOptionalAction, "help": help_text}
    if declared.kind is bool:
        return {"metavar": "{" + ",".join(SWITCH_WORDS) + "}", "help": help_text}
    options: dict = {"type": declared.kind, "help": help_text}
    if declared.choices:
        options["metavar"] = "{" + ",".join(declared.choices) + "}"
    return options


def config_from_args(args: argparse.Namespace, **defaults):
    """Defaults, then the --config file, then explicit flags: the same TrainConfig validation for all three."""
    from ..core.ground.config import ConfigError, TrainConfig, read_config_file, settings

    values: dict = dict(defaults)
    flags: dict[str, str] = {}  # the settings given as flags → their flag
    if args.config:
        values.update(read_config_file(args.config))  # only what the file sets: its defaults must not replace ours
    for declared in settings():
        value = getattr(args, declared.name, None)
        if value is None:  # not given: the file's value, else the default
            continue
        flags[declared.name] = declared.flag
        if declared.kind is bool and declared.optional:  # --dynamic auto|true|false
            if value not in SWITCH_WORDS:
                raise ConfigError(declared.name, f"unknown value {value!r}", ", ".join(SWITCH_WORDS)).called(
                    declared.flag)
            value = SWITCH_WORDS[value]
        values[declared.name] = value
    try:
        return TrainConfig.from_dict(values)
    except ConfigError as exc:  # a flag's bad value is called by the flag the user typed, not the field's name
        raise (exc.called(flags[exc.field]) if exc.field in flags else exc) from None
