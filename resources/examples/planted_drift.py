"""A sandwich network whose compiled numerics drift: a hand-written ELU on bf16 activations.

    workbench numerics --model resources/examples/planted_drift.py:PlantedDriftNet

The hidden activations are kept in bf16 (to halve their memory) and go through ELU written by hand:
`torch.where(h > 0, h, torch.exp(h) - 1)`. Eager PyTorch runs one op at a time and rounds every result to bf16:
exp(h) of a small negative h is just below 1, where bf16 values are 2^-8 apart, so `exp(h) - 1` keeps mostly that
rounding — for h = -0.01 it gives -0.0117 instead of -0.00996. Inductor fuses exp, the subtraction and the where
into one kernel that computes in fp32 and rounds once, at the end: it drops the round trip to bf16 between fused
ops (unless `torch._inductor.config.emulate_precision_casts` is on) and gets -0.00996. Neither is a bug; the two
compute different numbers, up to 0.002 apart on values near 0 — beyond bf16's tolerance for them (1e-3 +
1.6e-2·|value|). `workbench numerics` (measured on the CPU) marks the subtraction, at its source line, as the first
op that computes differently from eager on the same inputs; the layers after it inherit the difference. aot_eager
runs the ops one by one, as eager does, and matches; so does Inductor with `TORCHINDUCTOR_EMULATE_PRECISION_CASTS=1`.

The fix: `torch.expm1(h)` (exp(h) − 1 without the cancellation), or `F.elu(h)`: eager then rounds only what it
computed accurately, and compiled and eager agree on each op within bf16's tolerance.
"""

import torch

from workbench.core.domain.model import SandwichNet


class PlantedDriftNet(SandwichNet):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        core = self.core_block
        h = core.fc1(self.input_adapter(x)).to(torch.bfloat16)  # activations kept in bf16
        h = torch.where(h > 0, h, torch.exp(h) - 1)  # the planted drift: exp(h) - 1 rounded in bf16 by eager only
        return core.fc2(core.dropout(h.float()))
