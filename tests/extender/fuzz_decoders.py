"""The atheris (libFuzzer) target for tests/extender/test_atheris.py: bytes as
kube-scheduler's body for one verb, through the decoders the handlers use. An InputError
is the answer for bad input; any other exception is a crash libFuzzer reports.

Run: python tests/extender/fuzz_decoders.py VERB [libFuzzer flags] (VERB: filter, bind,
preempt)."""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from common.errors import InputError
    from extender.wire import (
        decode_json,
        parse_binding_args,
        parse_extender_args,
        parse_preemption_args,
    )

PARSERS = {"filter": parse_extender_args, "bind": parse_binding_args,
           "preempt": parse_preemption_args}


def main() -> None:
    parse = PARSERS[sys.argv[1]]

    def one(data: bytes) -> None:
        try:
            parse(decode_json(data))
        except InputError:
            pass

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
