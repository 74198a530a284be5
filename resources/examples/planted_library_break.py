"""A sandwich network whose graph breaks inside a library it calls, not in its own code.

    workbench explain --model resources/examples/planted_library_break.py:PlantedLibraryBreakNet

While training, `forward` augments the batch on the device with torchvision's `RandomErasing`: half of the time
it blanks one random rectangle, the same in every image of the batch. The model's own code is traceable; the
break is in torchvision's `RandomErasing.forward`, which decides whether to erase with
`if torch.rand(1) >= self.p:`, a Python branch on a tensor's value. The break's type is "Data-dependent
branching", but its innermost frame is torchvision's file (`torchvision/transforms/v2/_transform.py`); in this
file, the line that leads there is the `self.augment(...)` call. The library's code is not yours to change, so
the fix is at the call: augment the batch before the compiled model (in the data pipeline), or call it from a
small function decorated with `@torch.compiler.disable`, which runs eagerly while the rest of `forward` stays
compiled. In evaluation (`model.eval()`) nothing is erased and nothing breaks.
"""

import torch
from torchvision.transforms import v2

from workbench.core.domain.model import SandwichNet


class PlantedLibraryBreakNet(SandwichNet):
    def __init__(self, input_dim: int = 784, hidden_dim: int = 128, output_dim: int = 10, dropout: float = 0.2):
        super().__init__(input_dim, hidden_dim, output_dim, dropout)
        self.augment = v2.RandomErasing(p=0.5, scale=(0.02, 0.1), value=0.0)  # 0: the mean pixel, once normalised

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.input_adapter(x)
        if self.training:
            # RandomErasing takes images: (B, 784) → (B, 1, 28, 28) and back.
            h = self.augment(h.view(-1, 1, 28, 28)).flatten(1)  # the planted break is inside this call
        return self.core_block(h)
