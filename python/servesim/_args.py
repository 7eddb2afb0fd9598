"""Keyword arguments as servesim's command-line flags: `max_num_seqs=256` is `--max-num-seqs=256`,
`enable_lora=True` the switch `--enable-lora`, a list is comma-separated, a dict or list for a
flag that takes vLLM's JSON (speculative_config, kv_transfer_config) is that JSON. Values are
written so that the command line reads back the same numbers (a float's repr is exact) and
checked there; what cannot be a flag's text (None in a list, an object, a NUL character, an
empty value) is an Error naming the keyword as it was spelled."""
import json
import math
import numbers
import os

from .errors import Error

# The flags whose value is vLLM's JSON: a dict (or list) given for one is passed as its JSON.
JSON_FLAGS = {"speculative-config", "kv-transfer-config"}


def core():
    """The C++ half, _servesim, loaded when a command first runs: reading files and plotting
    need only the pure-Python half (h5py, pandas)."""
    from . import _servesim
    return _servesim


def flag_name(key):
    return key.replace("_", "-")


def a_kind(value):
    """VALUE's type in words: None, "an int", "a list"."""
    if value is None:
        return "None"
    name = type(value).__name__
    return ("an " if name[0] in "aeiou" else "a ") + name


def keyword_error(key, reason):
    """An Error for keyword KEY (named as the user spelled it; .field is its flag)."""
    return Error("field '%s': %s" % (key, reason), field=flag_name(str(key)), reason=reason)


def value_text(key, value):
    if flag_name(key) in JSON_FLAGS and isinstance(value, (dict, list, tuple)):
        try:
            return json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise keyword_error(key, "not expressible as JSON: %s" % e) from None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (list, tuple)):
        return ",".join(value_text(key, v) for v in value)
    if isinstance(value, dict):
        return ",".join("%s=%s" % (k, value_text(key, v)) for k, v in value.items())
    try:  # numpy scalars
        import numpy
        if isinstance(value, numpy.generic):
            return value_text(key, value.item())
    except ImportError:
        pass
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise keyword_error(key, "bytes that are not UTF-8 text") from None
    if not isinstance(value, (str, numbers.Number)):
        raise keyword_error(key, "%s is not a value servesim reads (give a number, text, a "
                            "path, True or False, or a list of them)" % a_kind(value))
    return str(value)


def checked(key, text):
    """TEXT as the value of keyword KEY: an Error if it could not reach the command line whole."""
    if "\0" in text:
        raise keyword_error(key, "contains a NUL character, which would cut the value short")
    if text == "":
        raise keyword_error(key, "an empty value (give a value, or leave the keyword out)")
    return text


def flag_kind(key):
    """KEY's kind as a run flag (switch, number or text); an Error for no such flag."""
    try:
        return core().flag_kind(flag_name(key))
    except (RuntimeError, Error):
        raise keyword_error(key, "not a servesim run flag (servesim run --help lists them)") \
            from None


def run_flags(config):
    """`run` flags from CONFIG (a dict of keyword arguments); None values are left out."""
    args = []
    for key, value in config.items():
        if value is None:
            continue
        name = flag_name(key)
        kind = flag_kind(key)
        if kind == "switch":
            if not isinstance(value, bool):
                raise keyword_error(key, "a switch takes True or False")
            if value:
                args.append("--" + name)
            continue
        args.append("--%s=%s" % (name, checked(key, value_text(key, value))))
    return args


def option_flags(options):
    """A command's own options (not run flags), e.g. jobs=2 -> --jobs=2."""
    args = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        if not isinstance(key, str):
            raise Error("field '%r': an option's name is text" % (key,), field=str(key),
                        reason="an option's name is text")
        if value is True:
            args.append("--" + flag_name(key))
        else:
            args.append("--%s=%s" % (flag_name(key), checked(key, value_text(key, value))))
    return args


def refuse(config, owned):
    """An Error for the first keyword of CONFIG that OWNED ({keyword: why}) says the function
    sets itself."""
    for key, why in owned.items():
        if config.get(key) is not None:
            raise keyword_error(key, why)
