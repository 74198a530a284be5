"""A sandwich network that mutates its input in place, which makes Inductor skip CUDA graphs on a GPU.

    workbench explain --model resources/examples/planted_cudagraph_skip.py:PlantedCudagraphSkipNet
    workbench train --model resources/examples/planted_cudagraph_skip.py:PlantedCudagraphSkipNet \\
        --device cuda --backend inductor --mode reduce-overhead

`forward` zeroes faint background pixels of the batch it is given in place (`x.masked_fill_`), to save a copy.
Compiling is unaffected: no graph break, and the compiled graph writes the result back into the caller's tensor.

On CUDA with `mode="reduce-overhead"`, Inductor replays each graph as a CUDA graph, which may only write to
memory it owns: parameters, buffers and its own outputs (a buffer's running statistic is fine). A fresh batch
tensor is none of these, so Inductor runs this graph without CUDA graphs, and logs "skipping cudagraphs due to
mutated inputs (1 instances)" with this line as the source; the Compile panel counts it as a CUDA-graph skip.
The run trains correctly, just without the launch-overhead saving. On the CPU there are no CUDA graphs
(`reduce-overhead` needs a GPU): the model compiles and trains normally. The fix is out-of-place code:
`x = x.masked_fill(...)`.
"""

import torch

from workbench.core.domain.model import SandwichNet

FAINT = 0.1  # share of the batch's brightest pixel below which a pixel counts as background noise


class PlantedCudagraphSkipNet(SandwichNet):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.masked_fill_(x < FAINT * x.max(), 0)  # the planted CUDA-graph skip: an in-place write to the input
        return self.core_block(self.input_adapter(x))
