"""The Evaluate view's kernel job: a checkpoint scored on a whole split, as plain data the window slices."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from workbench.core.domain import checkpoint
from workbench.core.domain.data import DataError, load_split
from workbench.core.ground.answers import EvaluationView
from workbench.core.ground.job_requests import EvaluateView
from workbench.core.kernel import job_handlers
from workbench.core.run.protocol import JobError, NeedsConsent
from workbench.core.domain.evaluation_view import (class_scores, confident_mistakes,
                                                   likely_label_errors)
from workbench.core.domain.model import model_for
from workbench.core.ground.config import TrainConfig
from workbench.core.ground.results import RunResults

from ..support.idx import idx_bytes


@pytest.fixture(scope="module")
def trained(trained_run) -> str:
    return str(trained_run.checkpoint)


def evaluate_view(checkpoint_path: str, **options) -> EvaluationView:
    """The kernel's evaluate_view job, called as the kernel calls it: with its typed request."""
    return job_handlers.evaluate_view(EvaluateView(checkpoint_path=checkpoint_path, **options))


@pytest.fixture(scope="module")
def sample_view(trained) -> EvaluationView:
    return evaluate_view(trained)


def untrained_checkpoint(path, classes: tuple[str, ...], **config) -> str:
    """A checkpoint of a freshly initialised network: enough to check the bookkeeping on any dataset."""
    torch.manual_seed(0)
    cfg = TrainConfig(**config)
    checkpoint.save(path, model_for(cfg, len(classes)), cfg, results=RunResults(), versions={}, classes=classes)
    return str(path)


# -- the bundled sample -----------------------------------------------------------------------------------------
def test_sample_view_scores_the_validation_split(sample_view, trained):
    view = sample_view
    assert (view.checkpoint, view.dataset, view.split, view.size) == (str(Path(trained).resolve()), "mnist-sample",
                                                                      "val", 1000)
    assert view.classes == tuple(str(d) for d in range(10))
    assert view.accuracy > 0.6  # a trained model, not chance
    confusion = np.array(view.confusion)
    assert confusion.shape == (10, 10) and confusion.sum() == 1000
    assert np.trace(confusion) / 1000 == pytest.approx(view.accuracy)
    val = load_split("mnist-sample", "val")
    assert view.labels == tuple(val.labels.tolist())
    assert view.support == tuple(np.bincount(val.labels.numpy(), minlength=10).tolist())
    pixels = np.frombuffer(base64.b64decode(view.images), dtype=np.uint8).reshape(-1, 28, 28)
    np.testing.assert_array_equal(pixels, val.images.numpy())  # image i is the sample labelled labels[i]
    wire = json.dumps(view.to_dict())
    assert len(wire) < 1_500_000  # crosses the kernel socket as JSON
    assert EvaluationView.from_dict(json.loads(wire)) == view  # and reads back as the same answer


def test_per_sample_arrays_agree_with_the_confusion_matrix(sample_view):
    view = sample_view
    labels, predicted = np.array(view.labels), np.array(view.predicted)
    rebuilt = np.zeros((10, 10), dtype=int)
    np.add.at(rebuilt, (labels, predicted), 1)
    np.testing.assert_array_equal(rebuilt, view.confusion)
    confidence, self_confidence = np.array(view.confidence), np.array(view.self_confidence)
    right = labels == predicted
    np.testing.assert_array_equal(confidence[right], self_confidence[right])  # p(label) is the top one there
    assert (self_confidence[~right] <= confidence[~right]).all()
    assert ((confidence >= 0.1 - 1e-4) & (confidence <= 1)).all()  # a maximum of 10 probabilities


def test_mistakes_and_label_errors_are_ranked_wrong_answers(sample_view):
    view = sample_view
    labels, predicted = np.array(view.labels), np.array(view.predicted)
    confidence, self_confidence = np.array(view.confidence), np.array(view.self_confidence)
    wrong = int((labels != predicted).sum())
    for ranked_wrong, values, ascending in ((view.mistakes, confidence, False),
                                            (view.label_errors, self_confidence, True)):
        indices = list(ranked_wrong)
        assert len(indices) == min(24, wrong) and len(set(indices)) == len(indices)
        assert all(labels[i] != predicted[i] for i in indices)
        ranked = values[indices]
        assert list(ranked) == sorted(ranked, reverse=not ascending)
        outside = np.setdiff1d(np.flatnonzero(labels != predicted), indices)
        if len(outside):  # nothing left out ranks ahead of what was kept
            assert (values[outside] >= ranked[-1]).all() if ascending else (values[outside] <= ranked[-1]).all()


# -- arithmetic and ranking -------------------------------------------------------------------------------------
def test_class_scores_by_hand():
    confusion = np.array([[5, 1, 0],  # class 0: 6 images, 5 found
                          [2, 3, 0],  # class 1: 5 images, 3 found
                          [0, 0, 0]])  # class 2: no images, never predicted
    scores = class_scores(confusion)
    assert scores["precision"] == pytest.approx([5 / 7, 3 / 4, 0.0])
    assert scores["recall"] == pytest.approx([5 / 6, 3 / 5, 0.0])
    p0, r0 = 5 / 7, 5 / 6
    assert scores["f1"] == pytest.approx([2 * p0 * r0 / (p0 + r0), 2 * 0.75 * 0.6 / 1.35, 0.0])
    assert scores["support"] == [6, 5, 0]
    json.dumps(scores, allow_nan=False)  # no NaN for an empty class


def test_a_class_predicted_but_never_right_scores_zero():
    scores = class_scores(np.array([[0, 4], [0, 2]]))
    assert scores["precision"] == [0.0, pytest.approx(2 / 6)]
    assert scores["recall"] == [0.0, 1.0]
    assert scores["f1"] == [0.0, pytest.approx(2 * (1 / 3) / (4 / 3))]


def test_label_errors_rank_by_self_confidence_not_by_confidence():
    labels = np.array([0, 1, 2, 0, 1, 2])
    predicted = np.array([0, 2, 0, 1, 1, 1])  # 1, 2, 3, 5 are wrong
    confidence = np.array([0.9, 0.6, 0.99, 0.5, 0.8, 0.7])
    self_confidence = np.array([0.9, 0.01, 0.005, 0.4, 0.8, 0.3])
    assert likely_label_errors(labels, predicted, self_confidence) == [2, 1, 5, 3]
    assert confident_mistakes(labels, predicted, confidence) == [2, 5, 1, 3]
    assert likely_label_errors(labels, predicted, self_confidence, limit=2) == [2, 1]
    assert confident_mistakes(labels, labels, confidence) == []  # no mistakes, no gallery


def test_ties_keep_the_lower_index_first():
    labels, predicted = np.zeros(4, int), np.ones(4, int)
    assert confident_mistakes(labels, predicted, np.full(4, 0.7)) == [0, 1, 2, 3]
    assert likely_label_errors(labels, predicted, np.full(4, 0.1)) == [0, 1, 2, 3]


# -- other datasets ---------------------------------------------------------------------------------------------
def test_idx_folder_uses_its_test_split(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (30, 28, 28), dtype=np.uint8)
    labels = (np.arange(30) % 10).astype(np.uint8)
    for prefix, count in (("train", 30), ("t10k", 12)):
        (tmp_path / f"{prefix}-images-idx3-ubyte").write_bytes(idx_bytes(images[:count]))
        (tmp_path / f"{prefix}-labels-idx1-ubyte").write_bytes(idx_bytes(labels[:count]))
    ckpt = untrained_checkpoint(tmp_path / "idx.pt", tuple(str(d) for d in range(10)), dataset="idx",
                                data_root=str(tmp_path))
    view = evaluate_view(ckpt)
    assert (view.dataset, view.split, view.size) == ("idx", "test", 12)
    assert view.labels == tuple(labels[:12].tolist())
    assert np.array(view.confusion).sum(axis=1).tolist() == np.bincount(labels[:12], minlength=10).tolist()
    pixels = np.frombuffer(base64.b64decode(view.images), dtype=np.uint8)
    np.testing.assert_array_equal(pixels, images[:12].reshape(-1))
    assert evaluate_view(ckpt, split="val").size == 3  # the 10% hold-out of the training files


def test_image_folder_is_scored_by_folder_class(tmp_path, samples_dir):
    root = tmp_path / "digits"
    for name, digit in (("one", 1), ("zero", 0)):
        (root / name).mkdir(parents=True)
        for i in range(10):
            Image.open(samples_dir / f"digit_{digit}.png").save(root / name / f"{i}.png")
    ckpt = untrained_checkpoint(tmp_path / "folder.pt", ("one", "zero"), dataset="imagefolder", data_root=str(root))
    view = evaluate_view(ckpt)
    assert (view.dataset, view.split, view.classes) == ("imagefolder", "val", ("one", "zero"))
    assert view.size == 2 and sum(view.support) == 2
    assert np.array(view.confusion).shape == (2, 2)
    assert len(base64.b64decode(view.images)) == 2 * 784


def test_another_dataset_with_other_classes_is_refused(tmp_path, trained, samples_dir):
    for name in ("cat", "dog"):
        (tmp_path / name).mkdir()
        Image.open(samples_dir / "digit_3.png").save(tmp_path / name / "a.png")
    with pytest.raises(DataError, match="trained on 10 classes"):
        evaluate_view(trained, dataset="imagefolder", data_root=str(tmp_path))


def test_the_sample_has_no_test_split(trained):
    with pytest.raises(DataError, match="no separate test split"):
        evaluate_view(trained, split="test")


def test_untrusted_model_code_asks_for_consent(tmp_path, planted_break_spec):
    ckpt = untrained_checkpoint(tmp_path / "own.pt", tuple("0123456789"), model=planted_break_spec)
    with pytest.raises(JobError) as info:
        evaluate_view(ckpt)
    assert info.value.kind == "untrusted_code" and info.value.detail["model_spec"] == planted_break_spec
    assert isinstance(info.value, NeedsConsent) and info.value.model_spec == planted_break_spec
    assert evaluate_view(ckpt, trust_model_code=True).size == 1000


def test_a_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(checkpoint.CheckpointError, match="does not exist"):
        evaluate_view(str(tmp_path / "nothing.pt"))
