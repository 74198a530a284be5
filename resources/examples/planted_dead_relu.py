"""A sandwich network whose ReLUs are dead from the first step: fc1's biases start at -4.

    workbench train --model resources/examples/planted_dead_relu.py:PlantedDeadReluNet

fc1's weights start small (PyTorch's default, about ±1/√784), so w·x of a normalised image stays within about ±1:
with a bias of -4 every hidden unit's pre-activation is below 0 for every image, and ReLU outputs 0. A ReLU that
outputs 0 passes no gradient back, so fc1 never learns its way out; only fc2's bias learns, and the network predicts
the most common class (about 11% right). The per-layer statistics show it at step 1: 100% of fc2's inputs were 0
for the whole batch (dead units), and fc1's gradient is 0. The alerts say so ("dead_units" on fc2, then
"grad_vanishing" on fc1), with what to do.

The fix: keep PyTorch's initialisation (biases near 0), or use an activation that passes gradient below 0
(LeakyReLU, GELU); a learning rate too high can kill ReLUs mid-run the same way.
"""

import torch

from workbench.core.domain.model import SandwichNet


class PlantedDeadReluNet(SandwichNet):
    def __init__(self, **sizes):
        super().__init__(**sizes)
        with torch.no_grad():
            self.core_block.fc1.bias.fill_(-4.0)  # the planted initialisation: every ReLU starts (and stays) off
