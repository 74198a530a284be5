"""The remembered consent to import model files: per file, by absolute path and content hash."""

from __future__ import annotations

import json

import pytest

from workbench.core.ground.consent import ModelConsent


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "net.py"
    path.write_text("class Net: pass\n", encoding="utf-8")
    return path


@pytest.fixture
def consent(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))
    return ModelConsent()


def test_the_store_lives_in_the_config_folder(consent, tmp_path):
    assert consent.path == tmp_path / "config" / "trusted-models.json"


def test_a_trusted_file_is_remembered_across_instances(consent, model_file):
    spec = f"{model_file}:Net"
    assert not consent.is_trusted(spec) and consent.trusted() == []
    assert consent.trust(spec)
    again = ModelConsent(consent.path)
    assert again.is_trusted(spec) and again.is_trusted(f"{model_file}:OtherClass")  # consent is per file
    assert again.trusted() == [str(model_file.resolve())]
    assert not list(consent.path.parent.glob("*.tmp"))  # written atomically: no temp file left


def test_changed_content_is_no_longer_trusted(consent, model_file):
    spec = f"{model_file}:Net"
    consent.trust(spec)
    model_file.write_text("class Net: pass\nimport os  # changed\n", encoding="utf-8")
    assert not consent.is_trusted(spec)
    consent.trust(spec)
    assert consent.is_trusted(spec)


def test_clear_forgets_every_file(consent, model_file, tmp_path):
    other = tmp_path / "other.py"
    other.write_text("x = 1\n", encoding="utf-8")
    consent.trust(f"{model_file}:Net")
    consent.trust(f"{other}:Net")
    consent.clear()
    assert consent.trusted() == [] and not consent.is_trusted(f"{other}:Net")


def test_relative_missing_and_builtin_specs_are_never_trusted(consent, model_file, monkeypatch):
    monkeypatch.chdir(model_file.parent)
    for spec in ("net.py:Net", "sandwich", f"{model_file.parent / 'gone.py'}:Net", "no-colon"):
        assert not consent.trust(spec) and not consent.is_trusted(spec)
    assert consent.trusted() == []


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe garbage", b"[]", b'{"files": 3}',
                                     b'{"files": {"a": 1}}', b""])
def test_a_damaged_store_reads_as_empty_and_is_rewritten(consent, model_file, content):
    consent.path.parent.mkdir(parents=True)
    consent.path.write_bytes(content)
    spec = f"{model_file}:Net"
    assert consent.trusted() == [] and not consent.is_trusted(spec)
    assert consent.trust(spec) and consent.is_trusted(spec)
    assert list(json.loads(consent.path.read_text())["files"]) == [str(model_file.resolve())]


def test_a_store_that_is_a_folder_reads_as_empty(consent, model_file):
    consent.path.mkdir(parents=True)
    assert consent.trusted() == [] and not consent.is_trusted(f"{model_file}:Net")
