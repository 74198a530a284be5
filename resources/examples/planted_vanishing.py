"""A deep stack of sigmoid layers whose gradient vanishes before it reaches the first layers.

    workbench train --model resources/examples/planted_vanishing.py:PlantedVanishingNet

Eight Linear → Sigmoid layers between the input and the output layer. Backward multiplies the gradient, at each
layer, by the sigmoid's slope (at most 0.25) and by the layer's weights (PyTorch's default initialisation shrinks a
vector by about 1/√3): roughly 0.14 per layer, so the first layer gets about 0.14⁸ ≈ 1.5e-7 of the gradient the last
one gets. The per-layer statistics show the gradient norms falling layer by layer; the alert "grad_vanishing" names
the first layers, whose weights barely move (their update-to-weight ratio is orders of magnitude below the last
layer's). The loss falls slowly, if at all.

The fix: ReLU-family activations (their slope is 1 where they are on), fewer layers, residual connections or
normalisation layers — what made deep networks trainable.
"""

from torch import nn

from workbench.core.domain.model import InputAdapter

DEPTH = 8


class PlantedVanishingNet(nn.Module):
    def __init__(self, input_dim: int = 784, hidden_dim: int = 128, output_dim: int = 10, dropout: float = 0.2):
        super().__init__()
        self.input_adapter = InputAdapter()
        layers: list[nn.Module] = []
        width = input_dim
        for _ in range(DEPTH):
            layers += [nn.Linear(width, hidden_dim), nn.Sigmoid()]  # the planted saturation, layer after layer
            width = hidden_dim
        self.stack = nn.Sequential(*layers)
        self.head = nn.Linear(hidden_dim, output_dim)

    def forward(self, x):
        return self.head(self.stack(self.input_adapter(x)))
