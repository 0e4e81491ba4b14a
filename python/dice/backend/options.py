"""The options of `torch.compile(model, backend="dice", options={...})`.

Two kinds of key:

- the backend's own: `fallback` ("inductor" or "eager": what runs whatever
  dice does not replace), `granularity` ("op", "fusion", "function": what a
  kernel request holds, as `dice-outline` forms them), `engine` (where
  candidates come from: "model", the default, is the dice.toml's model or,
  with none named, the shipped one of model/default; "model:DIR";
  "replay:FILE.jsonl"; "none" asks for no candidates at all),
  `config` (a dice.toml to start from), `jobs` (kernel library builds at
  once), `nvcc`, and `export_cache` (a folder of torch-mlir's exports:
  recorded where torch-mlir is installed, read where it is not;
  dice/export_cache.py; default `$DICE_EXPORT_CACHE`, else none);
- dice.toml keys, dotted (`"verifier.trials": 3`) or as sections
  (`"verifier": {"trials": 3}`): they override the file's values, and
  dice-opt checks their values as it checks a file (docs/config.md).

An unknown key (the backend's, or one dice-opt's schema does not have) or a
bad value of a backend key is a DiceError at the first compile: a mistake
in the call, not a failure of a graph. A bad value of a dice.toml key is
dice-opt's to find; it makes every graph take the fallback, with the
located error in the warning.
"""

import functools
import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from dice.errors import DiceError, ToolFailed, ToolNotFound
from dice.pipeline import DEFAULT_ARTIFACTS, DEFAULT_DATABASE
from dice.tools import find_tool, run

FALLBACKS = ("inductor", "eager")
GRANULARITIES = ("op", "fusion", "function")
BACKEND_KEYS = ("fallback", "granularity", "engine", "config", "jobs", "nvcc", "export_cache")


@functools.cache
def config_keys():
    """dice.toml's sections and their keys, {section: [key, ...]}, as dice-opt
    reads them (`--dice-config-keys`): the one schema there is. None where
    dice-opt cannot be run: then every graph takes the fallback anyway, with
    that reason, and a section or key is not checked here."""
    try:
        return json.loads(run([find_tool("dice-opt"), "--dice-config-keys"]).stdout)
    except (ToolNotFound, ToolFailed, json.JSONDecodeError):
        return None


def _is_config_section(option, value):
    keys = config_keys()
    return option in keys if keys is not None else isinstance(value, dict)


def _check_config_key(option, section, key):
    """An option naming a dice.toml key that does not exist is an error
    here, before any graph compiles; its value is dice-opt's to check."""
    keys = config_keys()
    if keys is None:
        return
    if section not in keys:
        raise DiceError(f"backend 'dice': option '{option}': no section [{section}] in "
                        f"dice.toml (sections: {', '.join(keys)})")
    if key not in keys[section]:
        raise DiceError(f"backend 'dice': option '{option}': no key '{key}' in dice.toml's "
                        f"[{section}] (keys: {', '.join(keys[section])})")


@dataclass
class BackendOptions:
    fallback: str = "inductor"
    granularity: str = "fusion"
    engine: str | None = None
    config: Path | None = None
    jobs: int = 2
    nvcc: str | None = None
    export_cache: str | None = field(
        default_factory=lambda: os.environ.get("DICE_EXPORT_CACHE") or None)
    # dice.toml values: {section: {key: value}}, the file's merged with the
    # options' (the options win).
    toml: dict = field(default_factory=dict)

    def config_value(self, section, key, default=None):
        return self.toml.get(section, {}).get(key, default)

    @property
    def database(self):
        return Path(self.config_value("database", "path", DEFAULT_DATABASE))

    @property
    def artifacts(self):
        return Path(self.config_value("artifacts", "dir", DEFAULT_ARTIFACTS))

    @property
    def baseline(self):
        # Under torch.compile the speed to beat is the fastest of what the
        # user would otherwise run: Inductor's code for the partition (the
        # fallback, DESIGN.md section 4) and its eager program, unless asked
        # otherwise.
        default = "fastest" if self.fallback == "inductor" else "eager"
        return self.config_value("verifier", "baseline", default)

    def engine_spec(self):
        """The engine to ask for candidates, or None for engine "none"."""
        if self.engine == "none":
            return None
        return self.engine or "model"


def parse_options(options):
    """BackendOptions from torch.compile's `options` dict (or None)."""
    options = dict(options or {})
    parsed = BackendOptions()
    overrides = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise DiceError(f"backend 'dice': option names are strings, got {key!r}")
        section, dot, name = key.partition(".")
        if dot:
            _check_config_key(key, section, name)
            overrides.setdefault(section, {})[name] = value
        elif key in BACKEND_KEYS:
            setattr(parsed, key, _backend_value(key, value))
        elif _is_config_section(key, value):
            if not isinstance(value, dict):
                raise DiceError(f"backend 'dice': option '{key}' is a dice.toml section: "
                                f"give a dict of its keys, got {type(value).__name__}")
            for name in value:
                _check_config_key(key, key, name)
            overrides.setdefault(key, {}).update(value)
        else:
            raise DiceError(f"backend 'dice': unknown option '{key}' (known: "
                            f"{', '.join(BACKEND_KEYS)}, and dice.toml keys as "
                            "'section.key' or section dicts)")
    parsed.toml = _read_config(parsed.config) if parsed.config else {}
    for section, values in overrides.items():
        parsed.toml.setdefault(section, {}).update(values)
    return parsed


def _backend_value(key, value):
    where = f"backend 'dice': option '{key}'"
    if key == "fallback":
        if value not in FALLBACKS:
            raise DiceError(f"{where} is {value!r}; one of: {', '.join(FALLBACKS)}")
        return value
    if key == "granularity":
        if value not in GRANULARITIES:
            raise DiceError(f"{where} is {value!r}; one of: {', '.join(GRANULARITIES)}")
        return value
    if key == "jobs":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DiceError(f"{where} must be a positive integer, got {value!r}")
        return value
    if key == "config":
        if value is None:
            return None
        path = Path(value)
        if not path.is_file():
            raise DiceError(f"{where}: no such file {path}")
        return path
    if value is not None and not isinstance(value, str):
        raise DiceError(f"{where} must be a string, got {type(value).__name__}")
    return value or None


def _read_config(path):
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise DiceError(f"{path}: {e}") from None
    except OSError as e:
        raise DiceError(f"{path}: cannot read: {e.strerror}") from None


def toml_text(values):
    """dice.toml text of {section: {key: value}} (scalars only: the format
    has no arrays or tables below the sections)."""
    lines = []
    for section, keys in values.items():
        if not isinstance(keys, dict):
            raise DiceError(f"dice.toml: [{section}] must be a table, got {keys!r}")
        lines.append(f"[{section}]")
        for key, value in keys.items():
            lines.append(f"{key} = {_toml_scalar(f'{section}.{key}', value)}")
        lines.append("")
    return "\n".join(lines)


def _toml_scalar(key, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (str, Path)):
        text = str(value).replace("\\", "\\\\").replace('"', '\\"')
        return f'"{text}"'
    raise DiceError(f"dice.toml: {key} must be a string, number or boolean, got "
                    f"{type(value).__name__}")
