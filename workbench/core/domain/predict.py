"""A preprocessed image → class probabilities (the model's side of prediction; decoding is images.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..ground.images import Prediction, load_digit


def predict_pixels(model: torch.nn.Module, pixels: np.ndarray) -> tuple[float, ...]:
    """Class probabilities for one preprocessed 28×28 uint8 image, on the model's device."""
    device = next(model.parameters()).device
    x = torch.from_numpy(pixels).to(device).unsqueeze(0)
    if hasattr(model, "predict"):
        probs, _ = model.predict(x)
    else:  # a user's own network without the sandwich's OutputAdapter
        model.eval()
        with torch.inference_mode():
            probs = model(x).float().softmax(dim=-1)
    return tuple(float(p) for p in probs[0].cpu())


def predict_file(model: torch.nn.Module, path: str | Path, classes: tuple[str, ...]) -> Prediction:
    pixels = load_digit(path)
    probabilities = predict_pixels(model, pixels)
    label = int(np.argmax(probabilities))
    return Prediction(str(path), pixels, probabilities, label, classes)
