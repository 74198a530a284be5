"""A sandwich network with a planted graph break, to see what the Compile panel and `workbench explain` show.

    workbench explain --model resources/examples/planted_break.py:PlantedBreakNet

The `print` of a tensor statistic in `forward` needs the value on the host, so Dynamo cannot keep it in the graph:
it ends the graph there, runs the print eagerly, and starts a second graph after it.
"""

import torch

from workbench.core.domain.model import SandwichNet


class PlantedBreakNet(SandwichNet):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.input_adapter(x)
        print("mean input:", h.mean().item())  # the planted graph break
        return self.core_block(h)
