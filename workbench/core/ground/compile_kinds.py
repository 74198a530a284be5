"""The kinds of compile event (`CompileEvent.kind`), each declared once: what it means, and how the window's compile
timeline and the HTML report show it. Torch-free and Qt-free: the events, the report (history) and the window's
timeline panel all read this one table, so a kind looks the same wherever it is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompileKind:
    meaning: str  # one line: what an event of this kind says happened
    glyph: str  # the window's marker label
    colour: str  # "#rrggbb": the window's marker and list row, the report's chart mark and swatch
    rank: int  # how telling: the highest rank at a step colours its marker; lists put the highest first
    one: str  # counted once: "1 graph compiled"
    many: str  # counted more often: "2 graphs compiled"
    label: str = ""  # the report's name for it (legend, timeline table) where that is not `one`

    @property
    def name(self) -> str:
        """The kind named on its own (the report's legend and timeline table)."""
        return self.label or self.one


# In the report's lane order: its loss chart draws one row of marks per kind, in this order.
COMPILE_KINDS: dict[str, CompileKind] = {
    "graph": CompileKind("a graph compiled (forward, backward or eval)",
                         "◆", "#2ca02c", 2, "graph compiled", "graphs compiled"),
    "recompile": CompileKind("a guard failed and a frame compiled again",
                             "↻", "#ff7f0e", 4, "recompile", "recompiles"),
    "recompile_limit": CompileKind("a function reached the recompile limit: its next recompile runs it eagerly",
                                   "⚑", "#bcbd22", 5, "recompile-limit warning", "recompile-limit warnings"),
    "graph_break": CompileKind("Dynamo stopped tracing: the code after it runs eagerly until the next graph",
                               "✂", "#9467bd", 3, "graph break", "graph breaks"),
    "fallback": CompileKind("the compile failed and the run went on eagerly",
                            "⚠", "#d62728", 6, "eager fallback", "eager fallbacks", label="fallback to eager"),
    "cache_miss": CompileKind("Inductor's FX-graph or AOTAutograd cache had no entry: compiled from scratch",
                              "○", "#7f7f7f", 1, "cache miss", "cache misses"),
    "cache_hit": CompileKind("Inductor's FX-graph or AOTAutograd cache served a compiled graph",
                             "●", "#17becf", 0, "cache hit", "cache hits"),
    "cudagraph_skip": CompileKind("a graph ran without CUDA graphs", "⊘", "#e377c2", 5, "CUDA-graph skip",
                                  "CUDA-graph skips", label="CUDA graphs skipped"),
}


def compile_kind(kind: str) -> CompileKind:
    """The table's entry for `kind`; for a kind this version does not know (a newer version's run): a grey dot below
    every known kind, named by its key."""
    known = COMPILE_KINDS.get(kind)
    if known is not None:
        return known
    words = kind.replace("_", " ")
    return CompileKind(kind, "•", "#7f7f7f", -1, words, words)
