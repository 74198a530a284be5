"""A sandwich network with a planted shape-dependent recompile: its Python code depends on the batch size.

    workbench explain --model resources/examples/planted_recompile.py:PlantedRecompileNet

Batches of more than CHUNK images (evaluation-sized) go through the compute block in chunks of CHUNK, to cap the
activation memory. `x.shape[0] > CHUNK` and the chunk count, ceil(batch / CHUNK), are Python values, so Dynamo
guards on them: a compiled graph serves only batches on the same side of CHUNK with the same chunk count.

What torch 2.14 does (automatic dynamic shapes, the default): the first batch size compiles a static graph, and
the first other size recompiles once with the batch dimension dynamic. The plain sandwich network stops there,
whatever sizes follow; this one recompiles again for each batch that crosses CHUNK or needs another chunk count
(after 8 and 16 images, 300 and then 600 cost two more compiles). `--dynamic true` does not help: a dynamic
dimension is still guarded by the Python decisions taken on it. Past `torch._dynamo.config.recompile_limit`
compiles, the function runs eagerly.

`workbench explain` traces one batch and shows no graph break; the recompiles, each with the guard that failed,
are listed in a run's Compile panel. In a run, validation (no gradients) compiles a graph of its own anyway; this
model adds one whenever a validation batch needs another chunk count, e.g. a last batch of 600 images after
batches of 1,024 (3 chunks instead of 4). The fix: make shape decisions outside the compiled model (chunk in
the evaluation loop).
"""

import torch

from workbench.core.domain.model import SandwichNet

CHUNK = 256


class PlantedRecompileNet(SandwichNet):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.input_adapter(x)
        if x.shape[0] > CHUNK:  # the planted recompile: Python decisions on the batch size become guards
            return torch.cat([self.core_block(chunk) for chunk in h.split(CHUNK)])
        return self.core_block(h)
