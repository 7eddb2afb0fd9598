"""Keyword arguments as servesim's command-line flags: `max_num_seqs=256` is `--max-num-seqs=256`,
`enable_lora=True` the switch `--enable-lora`, a list is comma-separated. Values are written so
that the command line reads back the same numbers (a float's repr is exact)."""
import math

from .errors import Error


def core():
    """The C++ half, _servesim, loaded when a command first runs: reading files and plotting
    need only the pure-Python half (h5py, pandas)."""
    from . import _servesim
    return _servesim


def flag_name(key):
    return key.replace("_", "-")


def value_text(key, value):
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
    return str(value)


def run_flags(config):
    """`run` flags from CONFIG (a dict of keyword arguments); None values are left out."""
    args = []
    for key, value in config.items():
        if value is None:
            continue
        name = flag_name(key)
        try:
            kind = core().flag_kind(name)
        except RuntimeError:
            raise Error("field '%s': not a servesim run flag (servesim run --help lists them)"
                        % name, field=name, reason="not a servesim run flag") from None
        if kind == "switch":
            if not isinstance(value, bool):
                raise Error("field '%s': a switch takes True or False" % name, field=name,
                            reason="a switch takes True or False")
            if value:
                args.append("--" + name)
            continue
        args.append("--%s=%s" % (name, value_text(key, value)))
    return args


def option_flags(options):
    """A command's own options (not run flags), e.g. jobs=2 -> --jobs=2."""
    args = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        if value is True:
            args.append("--" + flag_name(key))
        else:
            args.append("--%s=%s" % (flag_name(key), value_text(key, value)))
    return args
