"""A sandwich network with a planted data-dependent branch, to see how a Python `if` on a tensor breaks the graph.

    workbench explain --model resources/examples/planted_branch.py:PlantedBranchNet

`forward` clips outliers only when the batch has any: `if (h.abs() > CLIP).any():`. Python needs a real True or
False to choose a side, and that value exists only once the tensor has been computed, so Dynamo cannot keep the
choice in the graph: it ends the graph at the `if`, lets Python evaluate the condition eagerly, and compiles what
follows as another graph. The break's type is "Data-dependent branching" (`workbench explain` may show Dynamo's
terse "generic_jump TensorVariable()" for it). The fix is branchless code: `h.clamp(-CLIP, CLIP)` changes nothing
where no value is out of range, so it can run unconditionally; `torch.where` or `torch.cond` cover the other cases.
"""

import torch

from workbench.core.domain.model import SandwichNet

CLIP = 2.5  # normalised MNIST pixels reach 2.82 (white), so real batches do take the branch


class PlantedBranchNet(SandwichNet):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.input_adapter(x)
        if (h.abs() > CLIP).any():  # the planted graph break: a Python branch on a tensor's value
            h = h.clamp(-CLIP, CLIP)
        return self.core_block(h)
