"""SandwichNet: shape/dtype adapter, default init, inference-mode predict, compile in place; user model specs."""

from __future__ import annotations

import textwrap

import pytest
import torch
from torch import nn

from workbench.core.ground.errors import WorkbenchError
from workbench.core.domain.model import ModelSpecError, SandwichNet, build_model, load_model_class


@pytest.fixture
def clean_dynamo():
    import torch._dynamo

    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _images(batch: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 256, (batch, 1, 28, 28), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def test_accepts_uint8_images_and_flat_floats_with_same_result():
    torch.manual_seed(0)
    model = SandwichNet(hidden_dim=16).eval()
    images = _images(5)
    out_images = model(images)
    out_flat = model(images.reshape(5, 784).float() / 255.0)
    assert out_images.shape == (5, 10) and out_flat.shape == (5, 10)
    assert out_images.dtype == torch.float32
    torch.testing.assert_close(out_images, out_flat)  # uint8 is scaled to 0..1 inside the model


def test_accepts_float_images_4d():
    model = SandwichNet(hidden_dim=8)
    assert model(torch.rand(3, 1, 28, 28)).shape == (3, 10)


def test_predict_returns_probabilities_without_autograd():
    torch.manual_seed(0)
    model = SandwichNet(hidden_dim=16)
    model.train()
    probs, classes = model.predict(_images(4))
    assert probs.shape == (4, 10) and classes.shape == (4,)
    torch.testing.assert_close(probs.sum(dim=-1), torch.ones(4))
    assert (probs >= 0).all()
    assert torch.equal(classes, probs.argmax(dim=-1))
    assert probs.requires_grad is False
    assert probs.is_inference()  # inference_mode, not merely no_grad
    assert model.training  # predict restores the mode it found


def test_predict_is_deterministic_despite_dropout():
    torch.manual_seed(0)
    model = SandwichNet(hidden_dim=16, dropout=0.5).train()
    x = _images(6)
    assert torch.equal(model.predict(x)[0], model.predict(x)[0])  # eval mode inside predict: no dropout


def test_same_seed_same_init_and_it_is_pytorchs_default():
    torch.manual_seed(123)
    a = SandwichNet(hidden_dim=32)
    torch.manual_seed(123)
    b = SandwichNet(hidden_dim=32)
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(pa, pb), name
    # No custom (device-dependent) init: the weights are exactly what nn.Linear draws by default.
    torch.manual_seed(123)
    fc1, fc2 = nn.Linear(784, 32), nn.Linear(32, 10)
    assert torch.equal(a.core_block.fc1.weight, fc1.weight)
    assert torch.equal(a.core_block.fc1.bias, fc1.bias)
    assert torch.equal(a.core_block.fc2.weight, fc2.weight)
    torch.manual_seed(124)
    c = SandwichNet(hidden_dim=32)
    assert not torch.equal(a.core_block.fc1.weight, c.core_block.fc1.weight)


def test_state_dict_keys_have_no_orig_mod_after_compile(clean_dynamo):
    torch.manual_seed(0)
    model = SandwichNet(hidden_dim=8)
    keys_before = list(model.state_dict())
    eager_out = model.eval()(_images(2))
    model.compile(backend="aot_eager")
    compiled_out = model(_images(2))  # really goes through the compiled path
    keys_after = list(model.state_dict())
    assert keys_after == keys_before
    assert not any("_orig_mod" in k for k in keys_after)
    torch.testing.assert_close(compiled_out, eager_out)
    fresh = SandwichNet(hidden_dim=8)
    fresh.load_state_dict(model.state_dict())  # loads into a plain, uncompiled network


def test_build_model_sandwich():
    model = build_model("sandwich", input_dim=784, hidden_dim=24, output_dim=7, dropout=0.1)
    assert isinstance(model, SandwichNet)
    assert model.core_block.fc1.out_features == 24
    assert model(_images(2)).shape == (2, 7)


USER_MODEL = '''
import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, dropout):
        super().__init__()
        self.fc = nn.Linear(input_dim, output_dim)
        self.hidden_dim = hidden_dim

    def forward(self, x):
        return self.fc(x.flatten(1).float())


def not_a_class():
    return 1


class NotAModule:
    pass
'''


@pytest.fixture
def user_model_file(tmp_path):
    path = tmp_path / "user_model.py"
    path.write_text(USER_MODEL)
    return path


def test_build_model_loads_user_class(user_model_file):
    model = build_model(f"{user_model_file}:TinyNet", input_dim=784, hidden_dim=5, output_dim=10, dropout=0.0)
    assert type(model).__name__ == "TinyNet"
    assert model.hidden_dim == 5
    assert model(_images(3)).shape == (3, 10)


@pytest.mark.parametrize("make_spec, words", [
    (lambda d: "sandwhich", ["sandwich", "ClassName"]),
    (lambda d: f"{d}/missing.py:Net", ["does not exist"]),
    (lambda d: f"{d}/user_model.py:Missing", ["no nn.Module class named 'Missing'"]),
    (lambda d: f"{d}/user_model.py:not_a_class", ["no nn.Module class"]),
    (lambda d: f"{d}/user_model.py:NotAModule", ["no nn.Module class"]),
    (lambda d: f"{d}/user_model.py:", ["ClassName"]),
    (lambda d: f"{d}/broken.py:Net", ["could not import", "SyntaxError"]),
    (lambda d: f"{d}/raises.py:Net", ["could not import", "RuntimeError", "boom"]),
    (lambda d: f"{d}/notes.txt:Net", ["not a Python file"]),
    (lambda d: f"{d}:Net", ["does not exist"]),  # a folder
])
def test_bad_model_specs_raise_model_spec_error(tmp_path, user_model_file, make_spec, words):
    (tmp_path / "broken.py").write_text("class Net(:\n")
    (tmp_path / "raises.py").write_text("raise RuntimeError('boom')\n")
    (tmp_path / "notes.txt").write_text("class Net: pass\n")
    with pytest.raises(ModelSpecError) as info:
        load_model_class(make_spec(tmp_path))
    assert isinstance(info.value, WorkbenchError) and info.value.kind == "config"
    for word in words:
        assert word in str(info.value)


def test_user_class_with_wrong_constructor_raises_model_spec_error(tmp_path):
    path = tmp_path / "noargs.py"
    path.write_text(textwrap.dedent('''
        from torch import nn
        class NoArgs(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(784, 10)
    '''))
    with pytest.raises(ModelSpecError):
        build_model(f"{path}:NoArgs", input_dim=784, hidden_dim=8, output_dim=10, dropout=0.0)


# -- building from a config, and the output check -----------------------------------------------------------------
def test_model_for_uses_the_configs_settings():
    from workbench.core.ground.config import TrainConfig
    from workbench.core.domain.model import model_for

    model = model_for(TrainConfig(hidden_dim=12, dropout=0.3), output_dim=4)
    assert model.core_block.fc1.out_features == 12 and model.core_block.fc2.out_features == 4
    assert model.core_block.dropout.p == 0.3


class _Noisy(nn.Module):
    """Draws random numbers in forward() (as some users' models do) and returns `outputs` columns."""

    def __init__(self, outputs: int):
        super().__init__()
        self.fc = nn.Linear(784, outputs)

    def forward(self, x):
        return self.fc(x.flatten(1).float()) + torch.randn(x.shape[0], 1)


def test_check_outputs_leaves_the_random_stream_and_the_mode_alone():
    from workbench.core.domain.model import check_outputs

    model = _Noisy(10).train()
    torch.manual_seed(3)
    check_outputs(model, _images(4), output_dim=10)
    after_check = torch.rand(3)
    torch.manual_seed(3)
    assert torch.equal(torch.rand(3), after_check)
    assert model.training


@pytest.mark.parametrize("model, what", [(_Noisy(5), r"shape \(4, 5\)"), (SandwichNet(hidden_dim=8), "")])
def test_check_outputs_names_the_wrong_shape(model, what):
    from workbench.core.domain.model import check_outputs

    check_outputs(SandwichNet(hidden_dim=8), _images(4), output_dim=10)
    with pytest.raises(ModelSpecError, match=what + r".*expected \(4, 3\)"):
        check_outputs(model, _images(4), output_dim=3)


def test_check_outputs_refuses_a_tuple():
    from workbench.core.domain.model import check_outputs

    class Pair(_Noisy):
        def forward(self, x):
            return super().forward(x), None

    with pytest.raises(ModelSpecError, match="returned a tuple"):
        check_outputs(Pair(10), _images(4), output_dim=10)
